# Sourced by scripts/container_check.sh (or by hand, to use the same podman):
# installs podman and its helpers from Debian (catatonit: the pods' infra
# process for `podman kube play`), writes podman's own
# containers.conf (runc, cgroupfs, ulimits the host allows) under
# $THERMOCLINE_CONTAINER_DIR and exports CONTAINERS_CONF so that the host's
# global configuration is left alone, and makes the Debian 12 base image
# (debian:12-slim) once, with debootstrap from the mirror apt uses, since no
# container registry is reachable. Safe to source any number of times.
#   . scripts/container/podman_env.sh && podman images
# Needs root (podman runs rootful here: rootless needs subuid ranges and
# slirp4netns, which this setup does not install).

container_dir=${THERMOCLINE_CONTAINER_DIR:-/var/tmp/thermocline-containers}
base_image=debian:12-slim

podman_env_fail() { echo "podman_env: $*" >&2; return 1; }

podman_env_packages() {
  local p missing=()
  for p in podman buildah debootstrap runc catatonit iptables python3 python3-yaml curl; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "podman_env: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -q || podman_env_fail "apt-get update failed" || return 1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
    podman_env_fail "apt-get install ${missing[*]} failed" || return 1
}

# crun, podman's default runtime, fails on this kind of VM's cgroup v1 layout
# without systemd; runc works. Containers get the host's own hard limits as
# their ulimits (podman's defaults ask for more than the host allows).
podman_env_config() {
  local nofile nproc
  nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] && nofile=1048576
  [ "$nproc" = unlimited ] && nproc=32768
  [ "$nproc" -gt 32768 ] && nproc=32768
  mkdir -p "$container_dir"
  cat > "$container_dir/containers.conf" <<CONF
# podman's configuration for scripts/container_check.sh (CONTAINERS_CONF).
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF
  export CONTAINERS_CONF="$container_dir/containers.conf"
}

# The mirror apt uses for bookworm, from a deb822 .sources file or a
# sources.list line.
podman_env_mirror() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '/^URIs:/ {u=$2} /^Suites:/ && / bookworm( |$)/ {print u; exit}' "$f")
    [ -n "$uri" ] && { echo "$uri"; return 0; }
  done
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}')
  [ -n "$uri" ] && { echo "$uri"; return 0; }
  echo http://deb.debian.org/debian
}

# Like Debian's official slim image: minbase, with documentation, man pages
# and locales removed and kept out of later apt installs.
podman_env_base_image() {
  if podman image exists "$base_image"; then
    echo "podman_env: base image $base_image present"
    return 0
  fi
  local mirror rootfs start
  mirror=$(podman_env_mirror)
  rootfs=$(mktemp -d "$container_dir/rootfs.XXXXXX")
  start=$(date +%s)
  echo "podman_env: making $base_image with debootstrap --variant=minbase bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$rootfs" "$mirror" > "$container_dir/debootstrap.log" 2>&1 || {
    tail -20 "$container_dir/debootstrap.log" >&2; rm -rf "$rootfs"
    podman_env_fail "debootstrap failed (log: $container_dir/debootstrap.log)"; return 1; }
  cat > "$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
DPKG
  cat > "$rootfs/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs"/usr/share/{man,info,locale,lintian}/* "$rootfs"/var/lib/apt/lists/* \
         "$rootfs"/var/cache/apt/* "$rootfs"/var/log/* "$rootfs"/tmp/*
  tar -C "$rootfs" -c . | podman import --change 'CMD ["bash"]' - "$base_image" > /dev/null || {
    rm -rf "$rootfs"; podman_env_fail "podman import of $rootfs failed"; return 1; }
  rm -rf "$rootfs"
  podman tag "$base_image" "docker.io/library/$base_image"
  echo "podman_env: made $base_image in $(( $(date +%s) - start )) s"
}

podman_env_packages || return 1 2>/dev/null || exit 1
podman_env_config
podman_env_base_image || return 1 2>/dev/null || exit 1
