# Sourced by run_gpu_checks.sh --prebuilt when DIR/debs exists (validation/gpu/stage_prebuilt.sh
# made it): unpacks the staged Debian packages under DIR/root, makes OpenMPI's own directories
# (plugins, PMIx, help texts, configuration) visible at the paths it was built with, puts mpirun
# on PATH, and supplies exactly the shared libraries this machine lacks: each "not found" of ldd is
# looked up in the unpacked packages (linked into DIR/lib) or, for CUDA's libraries (cuDNN and
# NCCL may live in a Python package's folder), on the machine (its folder goes on
# LD_LIBRARY_PATH). The machine's own newer libraries win wherever it has them. Expects BUILD.
unpack_prebuilt() {
  local root=$BUILD/root lib=$BUILD/lib deb d soname found pass missing
  local -A tried=()
  mkdir -p "$root" "$lib" "$BUILD/mpi-bin"
  for deb in "$BUILD"/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$root" || { echo "unpack_prebuilt: cannot unpack $deb" >&2; return 1; }
    else
      (cd "$root" && ar p "$deb" "$(ar t "$deb" | grep '^data.tar')" | tar -xJ) ||
        { echo "unpack_prebuilt: cannot unpack $deb (no dpkg-deb)" >&2; return 1; }
    fi
  done
  for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 /usr/share/openmpi \
           /usr/share/pmix /etc/openmpi; do
    if [[ -e $d ]]; then
      echo "unpack_prebuilt: $d exists on this machine: using it, not the staged one" >&2
    elif [[ -e $root$d ]]; then
      mkdir -p "$(dirname "$d")" && ln -s "$root$d" "$d"
    fi
  done
  ln -sf "$root/usr/bin/orterun" "$BUILD/mpi-bin/mpirun"
  export PATH=$BUILD/mpi-bin:$root/usr/bin:$PATH
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # Three passes: a library found in one pass shows its own dependencies in the next.
  for pass in 1 2 3; do
    missing=$(for f in "$BUILD"/bin/* "$BUILD"/tests/* "$root"/usr/bin/orterun \
                       "$root"/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_*.so \
                       "$root"/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so; do
                [[ -f $f ]] && ldd "$f" 2>/dev/null
              done | awk '/not found/ {print $1}' | sort -u)
    [[ -z $missing ]] && break
    for soname in $missing; do
      [[ -n ${tried[$soname]:-} ]] && continue
      tried[$soname]=1
      found=$(find "$root" -name "$soname" \( -type f -o -type l \) 2>/dev/null | head -1)
      if [[ -n $found ]]; then
        ln -sf "$found" "$lib/$soname"
        continue
      fi
      found=$(find /usr/local /opt /usr/lib -name "$soname" \( -type f -o -type l \) 2>/dev/null | head -1)
      if [[ -n $found ]]; then
        export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$found")
      else
        # Plugins of networks this check does not use (UCX, libfabric, verbs) stay unloadable.
        echo "unpack_prebuilt: $soname is neither staged nor on this machine" >&2
      fi
    done
  done
  echo "unpack_prebuilt: $(ls "$BUILD/debs" | wc -l) packages under $root; $(ls "$lib" | wc -l) libraries supplied; LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
}
