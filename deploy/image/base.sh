#!/usr/bin/env bash
# Makes the runtime base image of deploy/Dockerfile from Debian's archive, with no container
# registry: debootstrap --variant=minbase, slimmed as Debian's -slim images are (no docs, man
# pages, locales, apt lists or caches), then imported with `podman import`.
#
#   deploy/image/base.sh [--mirror URL] [--suite SUITE] [--keep-tree DIR] [IMAGE]
#
# IMAGE defaults to localhost/npuzzle-base:bookworm. The mirror defaults to the first Debian URI
# in this machine's apt sources (else http://deb.debian.org/debian); a local mirror
# (file:///srv/mirror/debian, or an apt-cacher on the LAN) works the same. --keep-tree DIR keeps
# a copy of the root tree (before slimming) in DIR, for systemd-nspawn (deploy/e2e.sh).
# Then build the image with it:
#
#   podman build --pull=never --format docker -f deploy/Dockerfile \
#     --build-arg RUNTIME_IMAGE=localhost/npuzzle-base:bookworm -t npuzzle:latest .
#
# Air-gapped sites: run this where a Debian mirror is reachable (or against a local mirror),
# then carry the image over: `podman save -o npuzzle-base.tar IMAGE`, `podman load -i
# npuzzle-base.tar` (or `docker load -i`) on the build host. Needs root, debootstrap and podman
# (Debian: apt-get install debootstrap podman). About 1.5 minutes and 77 MB. Exit status 3:
# debootstrap failed (the mirror out of reach, say); 1: anything else.
set -euo pipefail

mirror=""
suite=bookworm
keep=""
image=""
while [ $# -gt 0 ]; do
    case "$1" in
    --mirror) mirror=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --keep-tree) keep=$2; shift 2 ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "base.sh: unknown option $1" >&2; exit 2 ;;
    *) image=$1; shift ;;
    esac
done
image=${image:-localhost/npuzzle-base:$suite}

die() { echo "base.sh: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap)"
command -v debootstrap >/dev/null || die "needs debootstrap (apt-get install debootstrap)"
command -v podman >/dev/null || die "needs podman (apt-get install podman)"

# The first Debian URI of this machine's apt sources: deb822 (URIs:) or one-line (deb URL ...).
apt_mirror() {
    local f
    for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk '
            /^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }
            /^deb / { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file|ftp):/ && $i !~ /security/) { print $i; exit } }
        ' "$f"
    done | head -n 1
}
mirror=${mirror:-$(apt_mirror)}
mirror=${mirror:-http://deb.debian.org/debian}

tree=$(mktemp -d "${TMPDIR:-/tmp}/npuzzle-base.XXXXXX")
# mktemp makes it 0700: it becomes the root directory, which every user must traverse.
chmod 0755 "$tree"
trap 'rm -rf "$tree"' EXIT
echo "base.sh: debootstrap --variant=minbase $suite from $mirror" >&2
if ! debootstrap --variant=minbase "$suite" "$tree" "$mirror" >"$tree.log" 2>&1; then
    tail -n 20 "$tree.log" >&2
    rm -f "$tree.log"
    echo "base.sh: debootstrap failed (is $mirror reachable?)" >&2
    exit 3
fi
rm -f "$tree.log"
if [ -n "$keep" ]; then
    mkdir -p "$keep"
    cp -a "$tree/." "$keep/"
fi
# Slimmed as Debian's -slim images are: what a container never reads.
rm -rf "$tree"/usr/share/doc/* "$tree"/usr/share/man/* "$tree"/usr/share/info/* \
    "$tree"/usr/share/locale/* "$tree"/usr/share/lintian "$tree"/usr/share/linda \
    "$tree"/var/lib/apt/lists/* "$tree"/var/cache/apt/*.bin "$tree"/var/cache/apt/archives/*.deb \
    "$tree"/var/cache/debconf/*-old "$tree"/var/log/* "$tree"/tmp/* "$tree"/var/tmp/* \
    "$tree"/dev/* "$tree"/proc/* "$tree"/sys/* "$tree"/run/*
# The image's resolver and hostname come from the runtime.
: >"$tree/etc/resolv.conf"
: >"$tree/etc/hostname"
tar --numeric-owner -C "$tree" -c . |
    podman import --quiet --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        - "$image" >/dev/null
echo "base.sh: made $image ($(podman image inspect --format '{{.Size}}' "$image" | awk '{ printf "%.0f MB", $1 / 1e6 }'))" >&2
