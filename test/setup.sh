#!/usr/bin/env bash
# test/setup.sh: what the whole test suite needs on a fresh machine of ours (Debian, as root), installed
# when missing or stale and cached outside the checkout. bin/test (the README's test command, `npm test`)
# sources it and calls setup_all before the run; by hand: `bash test/setup.sh [step...]` (default: all).
# Every step is idempotent, and with everything in place the whole setup installs nothing and runs no
# apt-get update (a few seconds, plus the real node's per-run image build).
#
# Steps (docs/developers/testing.md, "What npm test sets up", says what each installs and caches):
#   packages      the Debian packages of the list below that are missing: one apt-get install, with an
#                 apt-get update first only when that install fails (a fresh image has no package lists)
#   node_modules  npm ci when node_modules does not match package-lock.json (bin/prepare.ts decides)
#   kube          etcd, kube-apiserver and kube-controller-manager v1.20.2, built once by
#                 ../shared/kube/setup.sh into KUBEGLUE_KUBE_CACHE (~/.cache/kubeglue-kube, ~7 min);
#                 exports KUBEBUILDER_ASSETS. Skipped when KUBEBUILDER_ASSETS is set already.
#   promtool      from Debian's prometheus package (the binary only, no service) into
#                 KUBEGLUE_PROMTOOL_CACHE (~/.cache/kubeglue-promtool); put on PATH
#   real_node     test/support/kube-node/prepare.sh: root only, with ../shared/kube-node; cached in
#                 KUBEGLUE_NODE_CACHE (~/.cache/kube-node); KUBEGLUE_SKIP_REAL_NODE=1 leaves it out
# What a step cannot have here (no root, no ../shared/, no apt-get) it says before the run; the run's
# report (test/support/skip-report.ts) then names the suites that skip for it, before and after the run.
set -euo pipefail

setup_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# One line per Debian package the tests use: the package, how to tell it is there (alternatives split by
# `|`: a command on PATH, an absolute path or glob, or env:VAR when setting VAR stands in for it), and who
# needs it. A new server for the tests is one more line here (and, for its skip reason, one more entry in
# test/support/prerequisites.ts).
SETUP_DEBIAN_PACKAGES='
postgresql         env:DATABASE_URL|initdb|/usr/lib/postgresql/*/bin/initdb    the store and every server test (test/support/postgres.ts)
curl               curl                                                       the documentation examples
chromium           env:KUBEGLUE_CHROMIUM|env:CHROMIUM_PATH|/usr/bin/chromium  the dashboard browser tests
fonts-dejavu-core  /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf            the dashboard browser tests (their text)
kubernetes-client  kubectl                                                    kubectl checks of the CRDs and manifests
etcd-server        env:KUBEBUILDER_ASSETS|etcd|/usr/bin/etcd                  the Kubernetes tests (a restored cache links its etcd)
redis-server       redis-server|/usr/bin/redis-server                         the Redis protocol tests
mariadb-server     mariadbd|/usr/sbin/mariadbd                                the MariaDB protocol tests
samba              smbd|/usr/sbin/smbd                                        the SMB protocol tests
'

# What could not be set up, said before the run.
SETUP_NOTES=()

setup_say() { echo "test setup: $*" >&2; }
setup_note() { SETUP_NOTES+=("$*"); }

# Runs a command as root: directly, or through sudo when it asks for no password.
setup_as_root() {
  if [[ $(id -u) == 0 ]]; then
    "$@"
  else
    sudo -n "$@"
  fi
}

setup_can_be_root() { [[ $(id -u) == 0 ]] || sudo -n true 2>/dev/null; }

setup_present() { # probe: alternatives split by |
  local probe alternative
  IFS='|' read -ra probe <<<"$1"
  for alternative in "${probe[@]}"; do
    case $alternative in
      env:*)
        local name=${alternative#env:}
        [[ -n ${!name:-} ]] && return 0
        ;;
      /*)
        compgen -G "$alternative" >/dev/null && return 0
        ;;
      *)
        command -v "$alternative" >/dev/null 2>&1 && return 0
        ;;
    esac
  done
  return 1
}

setup_apt_updated=''

# apt-get as root with the package lists as they are; when that fails (none yet, or stale), one update
# and again. Services the packages bring are not started: the tests start their own on free ports.
setup_apt() {
  local log policy=/usr/sbin/policy-rc.d made_policy=''
  log=$(mktemp)
  if [[ ! -e $policy ]]; then
    setup_as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
    made_policy=1
  fi
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 -qq)
  local status=0
  if ! setup_as_root "${apt[@]}" "$@" >"$log" 2>&1; then
    if [[ -z $setup_apt_updated ]]; then
      setup_apt_updated=1
      setup_as_root "${apt[@]}" update >"$log" 2>&1 && setup_as_root "${apt[@]}" "$@" >"$log" 2>&1 || status=$?
    else
      status=1
    fi
  fi
  [[ -n $made_policy ]] && setup_as_root rm -f "$policy"
  if [[ $status != 0 ]]; then tail -n 20 "$log" >&2; fi
  rm -f "$log"
  return "$status"
}

setup_packages() {
  local missing=() needers=() package probe who
  while read -r package probe who; do
    [[ -z $package ]] && continue
    setup_present "$probe" || {
      missing+=("$package")
      needers+=("$package ($who)")
    }
  done <<<"$SETUP_DEBIAN_PACKAGES"
  ((${#missing[@]})) || return 0
  if ! command -v apt-get >/dev/null 2>&1; then
    setup_note "no apt-get to install ${needers[*]}"
    return 0
  fi
  if ! setup_can_be_root; then
    setup_note "not root (and no password-less sudo) to install ${needers[*]}"
    return 0
  fi
  setup_say "installing ${missing[*]} (Debian)"
  setup_apt install -y --no-install-recommends "${missing[@]}" || setup_note "apt-get could not install ${missing[*]}"
}

setup_node_modules() {
  local node=$setup_repo/node_modules/.bin/node
  if [[ -x $node ]] && (cd "$setup_repo" && "$node" bin/prepare.ts installed); then return 0; fi
  setup_say "installing the dependencies and the pinned Node 24 (npm ci)"
  # The engine warnings npm prints concern the Node that runs npm; the tests run on the one it installs.
  (cd "$setup_repo" && npm ci --no-audit --no-fund --loglevel=error)
}

# ../shared/<name> next to the checkout, else the machine's /work/shared/<name>.
setup_shared() {
  local candidate
  for candidate in "$setup_repo/../shared/$1" /work/shared/"$1"; do
    if [[ -f $candidate/setup.sh ]]; then
      (cd "$candidate" && pwd)
      return 0
    fi
  done
  return 1
}

setup_kube_home() { echo "${KUBEGLUE_KUBE_CACHE:-$HOME/.cache/kubeglue-kube}"; }

setup_kube() {
  [[ -n ${KUBEBUILDER_ASSETS:-} ]] && return 0
  local kube_home scripts log
  kube_home=$(setup_kube_home)
  if [[ ! -x $kube_home/bin/kube-apiserver ]]; then
    if ! scripts=$(setup_shared kube); then
      setup_note "no ../shared/kube/setup.sh to build the control plane into $kube_home"
      return 0
    fi
    if [[ $(id -u) != 0 ]]; then
      setup_note "the control plane is built as root only (../shared/kube/setup.sh)"
      return 0
    fi
    setup_say "building etcd, kube-apiserver and kube-controller-manager into $kube_home (once, about 7 min)"
    mkdir -p "$kube_home"
    log=$(mktemp)
    # One build per cache at a time: a second setup waits for the first instead of building beside it.
    if ! flock "$kube_home/.setup.lock" env KUBE_HOME="$kube_home" bash "$scripts/setup.sh" packages source build >"$log" 2>&1; then
      tail -n 40 "$log" >&2
      return 1
    fi
    rm -f "$log"
    # The source tree stays ($kube_home/src): the real node's kubelet, scheduler and proxy are built from it.
  fi
  export KUBEBUILDER_ASSETS=$kube_home/bin
}

setup_promtool() {
  command -v promtool >/dev/null 2>&1 && return 0
  local home=${KUBEGLUE_PROMTOOL_CACHE:-$HOME/.cache/kubeglue-promtool} download
  if [[ ! -x $home/bin/promtool ]]; then
    if ! command -v apt-get >/dev/null 2>&1; then
      setup_note "no apt-get to download Debian's prometheus package for promtool"
      return 0
    fi
    setup_say "extracting promtool from Debian's prometheus package into $home"
    download=$(mktemp -d)
    if ! (cd "$download" && { apt-get download -qq prometheus >/dev/null 2>&1 || {
      setup_as_root apt-get -qq update >/dev/null && apt-get download -qq prometheus >/dev/null
    }; } && dpkg-deb -x prometheus_*.deb x); then
      rm -rf "$download"
      setup_note "could not download Debian's prometheus package for promtool"
      return 0
    fi
    mkdir -p "$home/bin"
    cp "$download/x/usr/bin/promtool" "$home/bin/promtool"
    rm -rf "$download"
  fi
  export PATH=$home/bin:$PATH
}

setup_real_node() {
  if [[ -n ${KUBEGLUE_SKIP_REAL_NODE:-} ]]; then
    setup_note "KUBEGLUE_SKIP_REAL_NODE is set: the real node is not prepared"
    return 0
  fi
  if [[ $(id -u) != 0 ]]; then
    setup_note "the real node is prepared as root only (test/support/kube-node/prepare.sh)"
    return 0
  fi
  local kube_home kube_scripts node_scripts log
  kube_home=$(setup_kube_home)
  if ! kube_scripts=$(setup_shared kube) || ! node_scripts=$(setup_shared kube-node); then
    setup_note "no ../shared/kube and ../shared/kube-node to prepare the real node from"
    return 0
  fi
  log=$(mktemp)
  if [[ ! -d $kube_home/src ]]; then
    setup_say "fetching the Kubernetes source tree the real node is built from"
    KUBE_HOME=$kube_home bash "$kube_scripts/setup.sh" source >"$log" 2>&1 || { tail -n 40 "$log" >&2; return 1; }
  fi
  if [[ ! -s $kube_home/pki/ca.key ]]; then
    KUBE_HOME=$kube_home bash "$kube_scripts/setup.sh" pki >"$log" 2>&1 || { tail -n 40 "$log" >&2; return 1; }
  fi
  setup_say "preparing the real node (test/support/kube-node/prepare.sh; about 1 min when cached)"
  if ! KUBE_HOME=$kube_home NODE_HOME=${KUBEGLUE_NODE_CACHE:-$HOME/.cache/kube-node} KUBE_NODE_SCRIPTS=$node_scripts \
    bash "$setup_repo/test/support/kube-node/prepare.sh" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    return 1
  fi
  grep -E '^\[prepare .*ready in' "$log" >&2 || true
  rm -f "$log"
}

# The steps named (default: all), in order, then what could not be set up.
setup_all() {
  local started=$SECONDS step
  local steps=("$@")
  ((${#steps[@]})) || steps=(packages node_modules kube promtool real_node)
  for step in "${steps[@]}"; do
    "setup_$step"
  done
  if ((${#SETUP_NOTES[@]})); then
    setup_say "not set up here (the run's report names the suites that skip for it):"
    local note
    for note in "${SETUP_NOTES[@]}"; do echo "  - $note" >&2; done
  fi
  setup_say "done in $((SECONDS - started)) s"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  setup_all "$@"
fi
