# Podman on hosts like the project's machines (sourced by scripts/container-images and
# scripts/container-test; see deploy/README.md, "Podman").
#
# What such a host needs, found by trying on one:
#   - the runc runtime (crun fails to start containers there);
#   - every container's nofile and nproc limits within the host's hard limits: podman's default
#     nproc limit is above them and runc cannot raise a hard limit, so it fails with
#     "error setting rlimit type 6: operation not permitted" (type 7 is nofile). On the project's
#     machines (Firecracker VMs) nproc above 32768 fails too, whatever `ulimit -Hu` says; 4096 is
#     plenty (the limit counts the processes and threads of the container's uid on the whole host);
#   - no systemd as PID 1, so podman's health-check timers are never armed (podman logs
#     "unable to get systemd connection to add healthchecks"): `podman healthcheck run` runs a
#     container's check on demand, and the restart policy works without systemd (conmon).
# A --ulimit given to `podman run` or `podman build` replaces all of default_ulimits for that
# container, so whoever passes one passes both (scripts/container-test gives podman-compose
# --podman-run-args for that; podman build ignores default_ulimits and is given both too).
# podman_setup writes a containers.conf with those settings into DIR and points CONTAINERS_CONF
# at it, so nothing under /etc is changed; every podman started from this shell then uses it.

# The limit the host allows (the hard limit of this shell), capped at CAP.
podman_hard_limit() {
    local flag="$1" cap="$2" v
    v="$(ulimit -H "$flag")"
    if [ "$v" = unlimited ] || [ "$v" -gt "$cap" ]; then v="$cap"; fi
    echo "$v"
}

# Usage: podman_setup DIR   (sets CONTAINERS_CONF, PODMAN_NOFILE, PODMAN_NPROC)
podman_setup() {
    local dir="$1"
    PODMAN_NOFILE="$(podman_hard_limit -n 65536)"
    PODMAN_NPROC="$(podman_hard_limit -u 4096)"
    cat >"$dir/containers.conf" <<EOF
# Written by scripts/lib/podman.sh for one run.
[containers]
default_ulimits = ["nofile=$PODMAN_NOFILE:$PODMAN_NOFILE", "nproc=$PODMAN_NPROC:$PODMAN_NPROC"]
[engine]
runtime = "runc"
EOF
    export CONTAINERS_CONF="$dir/containers.conf" PODMAN_NOFILE PODMAN_NPROC
}

# Why podman cannot run here, or nothing when it can (a throwaway container from IMAGE).
podman_cannot_run() {
    local image="$1" out
    if ! out="$(podman run --rm --pull=never --network none "$image" true 2>&1)"; then
        echo "podman cannot start a container here: $(printf '%s' "$out" | tail -n 1)"
    fi
}

# Image size in MB (podman's own figure: the layers' uncompressed size).
podman_image_mb() {
    podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f", $1 / 1000000}'
}

# podman_pin_bridge_mac NETWORK [SECONDS]: waits (up to SECONDS, default 60) for NETWORK's bridge
# to appear and gives it the MAC address it has, which stops the kernel from changing it. Run it in
# the background while `up` or `start` brings the first container onto the network up.
# Why: a Linux bridge with no address of its own takes the lowest MAC of its ports, so its MAC
# changes whenever a container with a lower one joins; netavark 1.4 (Debian 12) leaves it so
# (netavark 1.9 pins it itself: containers/netavark#833). A container that learned the old MAC for
# the bridge's address, where aardvark-dns answers, gets no DNS answer until its ARP entry is
# renewed: up to about a minute (deploy/README.md, "Podman"). The bridge goes away when the last
# container on it stops, so a `start` after a `stop` needs it again.
podman_pin_bridge_mac() {
    local net="$1" end=$((SECONDS + ${2:-60})) iface=""
    command -v ip >/dev/null 2>&1 || return 0
    while [ "$SECONDS" -lt "$end" ]; do
        [ -n "$iface" ] || iface="$(podman network inspect -f '{{.NetworkInterface}}' "$net" 2>/dev/null)"
        if [ -n "$iface" ] && [ -e "/sys/class/net/$iface/address" ]; then
            ip link set dev "$iface" address "$(cat "/sys/class/net/$iface/address")" && return 0
        fi
        sleep 0.02
    done
    return 1
}

