# sextant_add_test(NAME name COMMAND cmd... [MPI_SIZE n] [LABELS l...] [TIMEOUT s])
#
# MPI tests run under mpiexec.mpich -n MPI_SIZE. Oversubscription is allowed (the
# harness yields the core when ranks outnumber CPUs); with more ranks than
# SEXTANT_MAX_TEST_RANKS the test is still registered, and ctest reports it as
# skipped with the reason (a dropped test would look like one that never existed).
set(SEXTANT_MAX_TEST_RANKS 4 CACHE STRING "Most MPI ranks a test may use on this machine")

function(sextant_add_test)
  cmake_parse_arguments(T "" "NAME;MPI_SIZE;TIMEOUT" "COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(cmd ${T_COMMAND})
  if(T_MPI_SIZE)
    if(T_MPI_SIZE GREATER SEXTANT_MAX_TEST_RANKS)
      message(STATUS "sextant: ${T_NAME} will be skipped: needs ${T_MPI_SIZE} ranks, SEXTANT_MAX_TEST_RANKS=${SEXTANT_MAX_TEST_RANKS}")
      add_test(NAME ${T_NAME} COMMAND sh -c
        "echo 'SKIP: needs ${T_MPI_SIZE} MPI ranks, SEXTANT_MAX_TEST_RANKS=${SEXTANT_MAX_TEST_RANKS}'; exit 77")
      list(APPEND T_LABELS mpi)
      set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77)
      return()
    endif()
    set(cmd ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_MPI_SIZE} ${MPIEXEC_PREFLAGS} ${T_COMMAND} ${MPIEXEC_POSTFLAGS})
    list(APPEND T_LABELS mpi)
  endif()
  add_test(NAME ${T_NAME} COMMAND ${cmd})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "OMP_NUM_THREADS=1;${T_ENVIRONMENT}" SKIP_RETURN_CODE 77)
  if(T_MPI_SIZE)
    set_tests_properties(${T_NAME} PROPERTIES PROCESSORS ${T_MPI_SIZE})
  endif()
endfunction()
