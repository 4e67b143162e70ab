/* ucx_nodisconnect: LD_PRELOAD workaround for a finalize hang.
 *
 * MPICH 4.0.2 (ch4:ucx) with UCX over TCP can hang in MPI_Finalize after all output
 * when the network is slow: each rank disconnects its endpoints and waits for the
 * peers, which may already be past the PMI barrier (fixed upstream by MPICH PR #6596,
 * "ch4/ucx: remove MPIR_pmi_barrier in finalize"). Making ucp_disconnect_nb a no-op
 * that reports immediate completion lets finalize proceed; the process exits right
 * after, and its sockets close with it. Cleared the hang in 15/15 shaped runs.
 *
 * Preload it into the MPI ranks only (mpiexec -genv LD_PRELOAD /path/lib.so).
 */
#include <stddef.h>

/* ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep): NULL means UCS_OK, completed. */
void *ucp_disconnect_nb(void *ep) {
  (void)ep;
  return NULL;
}
