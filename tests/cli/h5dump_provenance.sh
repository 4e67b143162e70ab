#!/usr/bin/env bash
# Files are readable without sextant: h5dump -A shows the provenance attributes.
source "$(dirname "$0")/../lib.sh"
results=$1
expect_rc 0 h5dump -A -g /meta "$results"
for attr in schema schema_version host cpu_model cores mpi_library mpi_version kokkos_version kokkos_backend \
            compiler git_revision command_line date_utc rank_placement allocator ranks; do
  contains "$out" "ATTRIBUTE \"$attr\""
done
contains "$out" "sextant.results"
contains "$out" "GROUP \"environment\""
echo "h5dump: provenance present"
