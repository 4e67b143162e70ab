# sextant_add_test(NAME name COMMAND cmd... [MPI_SIZE n | LAUNCHES n] [LABELS l...]
#                  [TIMEOUT s] [ENVIRONMENT k=v...])
#
# The one way to declare a test.
#   MPI_SIZE n: the command runs under mpiexec.mpich -n n, one OpenMP thread per rank.
#   LAUNCHES n: the command (a script) launches n MPI ranks itself and chooses its
#               threads.
# Both are labelled mpi and reserve n processors. Oversubscription is allowed (the
# harness yields the core when ranks outnumber CPUs); with more ranks than
# SEXTANT_MAX_TEST_RANKS the test is still registered, and ctest reports it as skipped
# with the reason (a dropped test would look like one that never existed). Every test
# may exit 77 to say it was skipped (the reason on its output).
set(SEXTANT_MAX_TEST_RANKS 4 CACHE STRING "Most MPI ranks a test may use on this machine")

function(sextant_add_test)
  cmake_parse_arguments(T "" "NAME;MPI_SIZE;LAUNCHES;TIMEOUT" "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(T_MPI_SIZE AND T_LAUNCHES)
    message(FATAL_ERROR "sextant_add_test(${T_NAME}): MPI_SIZE or LAUNCHES, not both")
  endif()
  set(ranks ${T_MPI_SIZE}${T_LAUNCHES})
  set(cmd ${T_COMMAND})
  set(env ${T_ENVIRONMENT})
  if(ranks)
    list(APPEND T_LABELS mpi)
    if(ranks GREATER SEXTANT_MAX_TEST_RANKS)
      message(STATUS "sextant: ${T_NAME} will be skipped: needs ${ranks} ranks, SEXTANT_MAX_TEST_RANKS=${SEXTANT_MAX_TEST_RANKS}")
      add_test(NAME ${T_NAME} COMMAND sh -c
        "echo 'SKIP: needs ${ranks} MPI ranks, SEXTANT_MAX_TEST_RANKS=${SEXTANT_MAX_TEST_RANKS}'; exit 77")
      set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77)
      return()
    endif()
  endif()
  if(T_MPI_SIZE)
    set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_MPI_SIZE} ${MPIEXEC_PREFLAGS} ${T_COMMAND} ${MPIEXEC_POSTFLAGS})
  endif()
  if(NOT T_LAUNCHES)
    list(PREPEND env "OMP_NUM_THREADS=1")
  endif()
  add_test(NAME ${T_NAME} COMMAND ${cmd})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT} SKIP_RETURN_CODE 77)
  if(env)
    set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${env}")
  endif()
  if(ranks)
    set_tests_properties(${T_NAME} PROPERTIES PROCESSORS ${ranks})
  endif()
endfunction()
