#!/bin/sh
# Debian's etcd (ETCD_FROM=debian) behind the name `etcd`. etcd 3.4 runs on arm64 only when
# ETCD_UNSUPPORTED_ARCH names it (3.5 supports arm64); amd64 needs nothing.
arch=$(dpkg --print-architecture 2>/dev/null || echo unknown)
case "$arch" in
    amd64|ppc64el) ;;
    *) export ETCD_UNSUPPORTED_ARCH="$arch" ;;
esac
exec /usr/local/bin/etcd.bin "$@"
