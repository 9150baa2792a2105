#!/usr/bin/env bash
# prepare.sh: everything the real-node tests (test/e2e/) need, cached outside the checkout, as root:
#   1. shared/kube-node/setup.sh: packages, kubelet + kube-scheduler, node certificates (cached steps)
#   2. kube-proxy, built from the same Kubernetes source tree in shared/kube's build environment (cached)
#   3. dnsmasq (cluster DNS for Pods, served by the harness) when missing
#   4. dist/ built from scratch (bin/prepare.ts, as bin/start builds), then shared/kube-node/images.sh with
#      KUBEGLUE_SRC = this checkout: the runner image is made from the checkout under test on every run
#      (its npm install is cached by the lock file)
#   KUBE_HOME=... [NODE_HOME=...] test/support/kube-node/prepare.sh
# Settings: KUBE_HOME (default $HOME/.cache/kubeglue-kube, the control plane build with src/ kept),
# NODE_HOME (default $HOME/.cache/kube-node, KUBEGLUE_NODE_CACHE in the tests), KUBE_NODE_SCRIPTS (the
# shared/kube-node directory; default: found next to the checkout or at /work/shared/kube-node).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
export KUBE_HOME=${KUBE_HOME:-$HOME/.cache/kubeglue-kube}
export NODE_HOME=${NODE_HOME:-${KUBEGLUE_NODE_CACHE:-$HOME/.cache/kube-node}}
scripts=${KUBE_NODE_SCRIPTS:-}
if [[ -z $scripts ]]; then
  for candidate in "$repo/../shared/kube-node" /work/shared/kube-node; do
    [[ -f $candidate/setup.sh ]] && { scripts=$(cd "$candidate" && pwd); break; }
  done
fi
[[ -n $scripts && -f $scripts/setup.sh ]] || { echo "prepare.sh: shared/kube-node not found (set KUBE_NODE_SCRIPTS)" >&2; exit 1; }
[[ $(id -u) == 0 ]] || { echo "prepare.sh: run as root" >&2; exit 1; }
log() { echo "[prepare $(date +%H:%M:%S)] $*"; }
t0=$(date +%s)

log "shared/kube-node setup.sh (cached steps)"
bash "$scripts/setup.sh"

# kube-proxy: the same tree and environment setup.sh uses for the kubelet
KUBE_SRC=${KUBE_SRC:-$KUBE_HOME/src/kubernetes-1.20.2}
GO_ROOT=${GO_ROOT:-/usr/lib/go-1.19}
if [[ ! -x $NODE_HOME/bin/kube-proxy ]]; then
  [[ -d $KUBE_SRC/cmd/kube-proxy ]] || { echo "prepare.sh: $KUBE_SRC missing (keep shared/kube's source tree)" >&2; exit 1; }
  log "building kube-proxy from $KUBE_SRC"
  (
    cd "$KUBE_SRC"
    unset GOROOT GOPATH GO111MODULE GOBIN
    export PATH=$GO_ROOT/bin:$PATH
    export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS= GOPROXY=off GOMAXPROCS=${KUBE_BUILD_PROCS:-2}
    make WHAT=cmd/kube-proxy
    cp -f _output/bin/kube-proxy "$NODE_HOME/bin/kube-proxy.tmp"
    mv -f "$NODE_HOME/bin/kube-proxy.tmp" "$NODE_HOME/bin/kube-proxy"
  )
fi

missing=()
command -v dnsmasq >/dev/null || missing+=(dnsmasq-base)
command -v socat >/dev/null || missing+=(socat)
command -v iptables-save >/dev/null || missing+=(iptables)
if ((${#missing[@]})); then
  log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

log "building dist/ for the image (from scratch, so nothing stale is shipped; bin/prepare.ts records what it built, so the next bin/start builds nothing)"
(cd "$repo" && rm -rf dist && node_modules/.bin/node bin/prepare.ts)
log "images.sh (the kubeglue image from $repo)"
KUBEGLUE_SRC=$repo bash "$scripts/images.sh" pause base kubeglue
log "ready in $(($(date +%s) - t0))s"
