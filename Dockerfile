# syntax=docker/dockerfile:1
#
# kubeglue: one image, every role. The entrypoint is the kubeglue CLI, the role is the argument:
#   npm ci && npm run build          # compiles to JavaScript in dist/ (and bundles the dashboard into dist/ui)
#   docker build -t kubeglue:dev .
#   docker run --rm --read-only --tmpfs /tmp -p 8080:8080 kubeglue:dev embedded
#   docker run … kubeglue:dev api | operator | runner   (see docs/kubernetes.md, "Container image")
#
# The official Node 24 slim image, at the Node version the `node` devDependency pins for the tests
# (package-lock.json). Pin the digest too where builds must be reproducible:
#   docker buildx imagetools inspect node:24.21.0-bookworm-slim   # then NODE_IMAGE=node:24.21.0-bookworm-slim@sha256:…
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# ---- build: production dependencies only ---------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm honours package.json#allowScripts: every production dependency with an install script is
# denied (isolated-vm loads its prebuilt binary for Node 24 at run time; ssh2's and cpu-features'
# native speed-ups are optional), so no compiler is needed. --strict-allow-scripts fails the build
# if a new dependency brings an install script nobody reviewed.
RUN npm ci --omit=dev --strict-allow-scripts --no-audit --no-fund
# Fail here, not in a Pod, if isolated-vm's prebuilt binary does not load on this image.
RUN node --no-node-snapshot -e "const ivm = require('isolated-vm'); const i = new ivm.Isolate({ memoryLimit: 8 }); if (i.compileScriptSync('6 * 7').runSync(i.createContextSync()) !== 42) process.exit(1);"

# ---- runtime ---------------------------------------------------------------------------------------
FROM ${NODE_IMAGE}
ARG NODE_IMAGE
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
ARG SOURCE=https://github.com/kubeglue/kubeglue
LABEL org.opencontainers.image.title="kubeglue" \
      org.opencontainers.image.description="Kubernetes-native tool execution service: one image, roles api, operator, runner, embedded" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.base.name="${NODE_IMAGE}"

# NODE_OPTIONS: isolated-vm needs V8 without the startup snapshot (the entrypoint passes the flag too,
# so a NODE_OPTIONS set by the deployment cannot drop it; worker processes get it from the pool).
# Nothing is written outside /tmp: the compile cache is off, the embedded role's data dir and HOME are
# under /tmp, so the root filesystem can be read-only with an emptyDir at /tmp.
ENV NODE_ENV=production \
    NODE_OPTIONS=--no-node-snapshot \
    NODE_DISABLE_COMPILE_CACHE=1 \
    HOME=/tmp \
    KUBEGLUE_HOST=0.0.0.0 \
    KUBEGLUE_DATA_DIR=/tmp/kubeglue

WORKDIR /app
# Only what runs, owned by root and read-only to the process: package.json ("type": "module"), the
# production node_modules, and dist/: the JavaScript `npm run build` compiles from the sources
# (tsconfig.build.json; compiled code saves 20-35 MiB per process over running the TypeScript) with the
# bundled dashboard in dist/ui. `npm run build` runs before `docker build`, so the last stage only copies
# (shared/kube-node/images.sh assembles the same image without a builder, and refuses a RUN here).
COPY package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY dist ./dist

# 8080 the /v1 API (api, embedded), 8081 the internal runner port (api), 9090 /metrics and /healthz
# (operator).
EXPOSE 8080 8081 9090
USER 65532:65532
# --heap-growing-percent=50: the old space grows by 1.5x after a major GC instead of up to 4x, which
# kept the API's footprint under load ~20 % lower at the same throughput (bench/README.md).
ENTRYPOINT ["node", "--no-node-snapshot", "--heap-growing-percent=50", "/app/dist/bin/kubeglue.js"]
CMD ["--help"]
