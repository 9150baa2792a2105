{{/* Names */}}

{{- define "kubeglue.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* <release>-kubeglue, or the release name when it already contains the chart name. */}}
{{- define "kubeglue.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels: (dict "ctx" $ "component" "api") */}}
{{- define "kubeglue.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kubeglue.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "kubeglue.labels" -}}
{{ include "kubeglue.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: kubeglue
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{- with .ctx.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* The labels above plus more, a key of both once: (dict "ctx" $ "component" "metrics" "extra" .Values.x.labels) */}}
{{- define "kubeglue.labelsWith" -}}
{{- toYaml (merge (dict) (.extra | default dict) (include "kubeglue.labels" . | fromYaml)) }}
{{- end -}}

{{/* What selects runner Pods: the labels the operator gives them (operator/launchers/launcher.ts RUNNER_SELECTOR). */}}
{{- define "kubeglue.runnerSelector" -}}
app.kubernetes.io/component: runner
app.kubernetes.io/managed-by: kubeglue-operator
{{- end -}}

{{/* Service accounts: (dict "ctx" $ "role" "api") */}}
{{- define "kubeglue.serviceAccountName" -}}
{{- $values := index .ctx.Values .role -}}
{{- default (printf "%s-%s" (include "kubeglue.fullname" .ctx) .role) $values.serviceAccount.name -}}
{{- end -}}

{{/* Image */}}

{{- define "kubeglue.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Secrets and URLs */}}

{{- define "kubeglue.keysSecretName" -}}
{{- default (printf "%s-keys" (include "kubeglue.fullname" .)) .Values.keys.existingSecret -}}
{{- end -}}

{{- define "kubeglue.postgresName" -}}
{{- printf "%s-postgres" (include "kubeglue.fullname" .) -}}
{{- end -}}

{{/* The Secret and key holding the Postgres URL. */}}
{{- define "kubeglue.databaseSecretKeyRef" -}}
{{- if .Values.postgres.enabled -}}
name: {{ include "kubeglue.postgresName" . }}
key: url
{{- else -}}
name: {{ default (printf "%s-database" (include "kubeglue.fullname" .)) .Values.database.secretName }}
key: {{ .Values.database.secretKey }}
{{- end -}}
{{- end -}}

{{- define "kubeglue.publicUrl" -}}
{{- if .Values.publicUrl -}}
{{- .Values.publicUrl -}}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts -}}
{{- printf "%s://%s" (ternary "https" "http" (gt (len .Values.ingress.tls) 0)) (first .Values.ingress.hosts) -}}
{{- else -}}
{{- printf "http://%s.%s.svc:%d" (include "kubeglue.fullname" .) .Release.Namespace (int64 .Values.api.service.port) -}}
{{- end -}}
{{- end -}}

{{/*
host:port of the api's gateway relay as runner Pods reach it: the internal Service's relay port.
*/}}
{{- define "kubeglue.gatewayRelayAddress" -}}
{{- printf "%s-internal:%d" (include "kubeglue.fullname" .) (int64 .Values.api.gatewayRelayPort) -}}
{{- end -}}

{{- define "kubeglue.internalUrl" -}}
{{- default (printf "http://%s-internal:%d" (include "kubeglue.fullname" .) (int64 .Values.api.internalService.port)) .Values.operator.internalUrl -}}
{{- end -}}

{{/*
PodDisruptionBudget API: policy/v1 where the cluster serves it (1.21+), policy/v1beta1 before (gone in
1.25). A live cluster (helm install) lists its kinds; an offline render (helm template) lists only
group/versions, so the Kubernetes version (--kube-version) decides there.
*/}}
{{- define "kubeglue.pdbApiVersion" -}}
{{- if .Capabilities.APIVersions.Has "policy/v1/PodDisruptionBudget" -}}
policy/v1
{{- else if .Capabilities.APIVersions.Has "policy/v1beta1/PodDisruptionBudget" -}}
policy/v1beta1
{{- else if semverCompare ">=1.21-0" .Capabilities.KubeVersion.Version -}}
policy/v1
{{- else -}}
policy/v1beta1
{{- end -}}
{{- end -}}

{{/* Security: the Pod Security "restricted" profile. (dict "user" 65532) */}}

{{- define "kubeglue.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .user | int64 }}
runAsGroup: {{ .user | int64 }}
fsGroup: {{ .user | int64 }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "kubeglue.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .user | int64 }}
runAsGroup: {{ .user | int64 }}
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Scheduling fields shared by the api and operator Pods: (dict "values" .Values.api) */}}
{{- define "kubeglue.scheduling" -}}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Environment both the api and the operator read. */}}
{{- define "kubeglue.commonEnv" -}}
- name: KUBEGLUE_HOST
  value: "0.0.0.0"
- name: KUBEGLUE_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: KUBEGLUE_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: KUBEGLUE_DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- include "kubeglue.databaseSecretKeyRef" . | nindent 6 }}
{{- if .Values.keys.existingSecret }}
- name: KUBEGLUE_MASTER_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.keys.existingSecret }}
      key: {{ .Values.keys.masterKeyKey }}
{{- else }}
{{- /*
No render holds a key (an offline one, helm template or Argo CD, would make new ones each time): the api
creates this Secret at its first start and nothing rewrites it (kube/secrets/keys.ts).
*/}}
- name: KUBEGLUE_KEYS_SECRET
  value: {{ include "kubeglue.keysSecretName" . }}
{{- end }}
- name: KUBEGLUE_PUBLIC_URL
  value: {{ include "kubeglue.publicUrl" . | quote }}
- name: KUBEGLUE_SANDBOX_MEMORY_MB
  value: {{ .Values.sandbox.memoryMb | int64 | quote }}
- name: KUBEGLUE_SANDBOX_TIMEOUT_MS
  value: {{ .Values.sandbox.timeoutMs | int64 | quote }}
- name: KUBEGLUE_EGRESS_PRIVATE
  value: {{ .Values.egress.private | quote }}
{{- with .Values.egress.allow }}
- name: KUBEGLUE_EGRESS_ALLOW
  value: {{ join "," . | quote }}
{{- end }}
{{- with .Values.egress.deny }}
- name: KUBEGLUE_EGRESS_DENY
  value: {{ join "," . | quote }}
{{- end }}
{{- end -}}

{{/* The /tmp emptyDir, the only writable path of the read-only root filesystem. */}}
{{- define "kubeglue.tmpVolumeMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/*
Readiness (/readyz), liveness (/healthz) and, when given, startup (/healthz) probes on a named port, their
timings from the role's values: (dict "values" .Values.api "port" "http")
*/}}
{{- define "kubeglue.probes" -}}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .port }}
  {{- toYaml .values.readinessProbe | nindent 2 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ .port }}
  {{- toYaml .values.livenessProbe | nindent 2 }}
{{- with .values.startupProbe }}
startupProbe:
  httpGet:
    path: /healthz
    port: {{ $.port }}
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
HorizontalPodAutoscaler API: autoscaling/v2 where the cluster serves it (1.23+), autoscaling/v2beta2
before (gone in 1.26); decided as kubeglue.pdbApiVersion is.
*/}}
{{- define "kubeglue.hpaApiVersion" -}}
{{- if .Capabilities.APIVersions.Has "autoscaling/v2/HorizontalPodAutoscaler" -}}
autoscaling/v2
{{- else if .Capabilities.APIVersions.Has "autoscaling/v2beta2/HorizontalPodAutoscaler" -}}
autoscaling/v2beta2
{{- else if semverCompare ">=1.23-0" .Capabilities.KubeVersion.Version -}}
autoscaling/v2
{{- else -}}
autoscaling/v2beta2
{{- end -}}
{{- end -}}
