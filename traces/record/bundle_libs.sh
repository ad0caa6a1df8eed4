# Sourced by the lent machine's bundles (lag_check_device_bundle.sh, new_workloads16_bundle.sh).
# bundle_libs DEST BINARY...: every library ldd lists for the binaries but glibc's own (the lent
# machine has a glibc that ran Debian 12's mariadbd: device16), stripped, real files under their
# sonames in DEST.
bundle_libs() {
  local dest=$1 bin so path
  shift
  local glibc='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libresolv|libutil\.so)'
  for bin in "$@"; do
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r so path; do
      [[ $so =~ $glibc ]] && continue
      [ -e "$dest/$so" ] || strip --strip-unneeded -o "$dest/$so" "$(readlink -f "$path")"
    done
  done
}
