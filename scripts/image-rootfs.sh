#!/bin/sh
# Runs inside the image build's first stage: gathers into $1 the only files the operator needs at run
# time, the binary, the shared libraries it links (as ldd resolves them on this Debian release), CA
# certificates, the IANA time zones and a passwd entry for the non-root user. The final stage is
# `FROM scratch` with just this tree: no shell, no package manager, nothing else to patch or exploit.
set -eu
root=$1
binary=/usr/local/bin/vto
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/usr/lib/ssl" "$root/usr/share" "$root/tmp"
chmod 1777 "$root/tmp"
cp "$binary" "$root$binary"
# The same binary as a kubectl plugin (`kubectl vto logs trun/NAME`): it reads its own name.
ln -s vto "$root/usr/local/bin/kubectl-vto"
# Every library, and the dynamic loader, under the path the binary asks for.
ldd "$binary" | awk '/=> \// { print $3 } /^\t\/[^ ]+ \(/ { print $1 }' | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
if ldd "$binary" | grep -q 'not found'; then
  echo "image-rootfs: a library of $binary is missing:" >&2; ldd "$binary" >&2; exit 1
fi
# OpenSSL's default verify path (/usr/lib/ssl/cert.pem) points at Debian's bundle, as on the host.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
ln -s /etc/ssl/certs/ca-certificates.crt "$root/usr/lib/ssl/cert.pem"
ln -s /etc/ssl/certs "$root/usr/lib/ssl/certs"
# RetrainingPolicy schedules read IANA zones at run time.
cp -a /usr/share/zoneinfo "$root/usr/share/"
# The distroless convention: uid 65532 "nonroot", so that tools that print the user show a name.
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
mkdir -p "$root/home/nonroot" && chown 65532:65532 "$root/home/nonroot"
