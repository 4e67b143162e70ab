# CTest helpers for tests that run on a ground-truth network: hosts made of network
# namespaces with an injected one-way delay and rate (cluster.sh, README.md here).
#
#   include(${PROJECT_SOURCE_DIR}/tests/validation/netns/NetnsCluster.cmake)
#
#   sextant_netns_cluster(FIXTURE fx HOSTS n DELAY_US d RATE r [UP_ARGS ...])
#       Tests netns.<fx>.up / netns.<fx>.down: FIXTURES_SETUP / FIXTURES_CLEANUP fx,
#       so the cluster comes down even when a test using it fails or times out.
#       UP_ARGS: more cluster.sh up options (after the defaults, so they win).
#   sextant_netns_test(NAME t FIXTURE fx COMMAND cmd... [TIMEOUT s] [LABELS ...]
#                      [ENVIRONMENT ...] [FIXTURES_SETUP ...] [FIXTURES_REQUIRED ...])
#       A test on cluster fx. Its environment holds SEXTANT_NETNS_STATE (the cluster),
#       SEXTANT_NETNS_CLUSTER (cluster.sh: `$SEXTANT_NETNS_CLUSTER mpiexec ...`) and
#       SEXTANT_NETNS_HOSTS (h0,h1,...). Label `validation`, RUN_SERIAL (timings
#       need the machine), exit status 77 = skipped (not root, no netns, ...).
#   sextant_netns_add_test(NAME t HOSTS n DELAY_US d RATE r COMMAND cmd... [...])
#       Both at once: a cluster of its own (fixture t) and one test on it.
#
# The cluster.sh state of fixture fx lives in ${CMAKE_CURRENT_BINARY_DIR}/netns/fx.
# Without libnetfilter_queue (no delay line) the tests are still added, and skip with
# the reason.
include_guard(GLOBAL)

set(SEXTANT_NETNS_DIR ${CMAKE_CURRENT_LIST_DIR} CACHE INTERNAL "cluster.sh and friends")
# cluster.sh up options of every fixture: the delay line busy-waits the last 20 us
# before a release (after asking to be woken early by how late timer wake-ups come,
# ~27 us on this VM), and host i's delay line and processes run on CPU i mod ncpu
# (the same wake-up path in every run). See README.md.
set(SEXTANT_NETNS_DEFAULT_UP_ARGS --spin-us 20 --pin)
set(SEXTANT_NETNS_EXTRA_UP_ARGS "" CACHE STRING "More cluster.sh up options for every network fixture (later ones win)")

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(SEXTANT_NFQ QUIET IMPORTED_TARGET libnetfilter_queue)
endif()

if(SEXTANT_NFQ_FOUND AND NOT TARGET sextant_delayline)
  # Test-only programs: never installed.
  add_executable(sextant_delayline ${SEXTANT_NETNS_DIR}/delayline.c)
  target_link_libraries(sextant_delayline PRIVATE PkgConfig::SEXTANT_NFQ)
  target_compile_options(sextant_delayline PRIVATE -Wall -Wextra)
  add_library(sextant_ucx_nodisconnect MODULE ${SEXTANT_NETNS_DIR}/ucx_nodisconnect.c)
  set_target_properties(sextant_ucx_nodisconnect PROPERTIES PREFIX "")
elseif(NOT SEXTANT_NFQ_FOUND)
  message(STATUS "sextant: libnetfilter_queue not found (pkg-config libnetfilter_queue; Debian: "
                 "libnetfilter-queue-dev): network validation tests will be skipped")
endif()

set(SEXTANT_NETNS_NO_DELAYLINE_MESSAGE
    "SKIP: no delay line: libnetfilter_queue was not found when CMake ran (install libnetfilter-queue-dev, e.g. scripts/setup --tests, and re-run cmake)")

function(_sextant_netns_skip_test name)
  add_test(NAME ${name} COMMAND sh -c "echo '${SEXTANT_NETNS_NO_DELAYLINE_MESSAGE}' >&2; exit 77")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS validation)
endfunction()

function(sextant_netns_cluster)
  cmake_parse_arguments(C "" "FIXTURE;HOSTS;DELAY_US;RATE" "UP_ARGS" ${ARGN})
  foreach(req FIXTURE HOSTS DELAY_US RATE)
    if(NOT DEFINED C_${req})
      message(FATAL_ERROR "sextant_netns_cluster: ${req} is required")
    endif()
  endforeach()
  set(state ${CMAKE_CURRENT_BINARY_DIR}/netns/${C_FIXTURE})
  set_property(GLOBAL PROPERTY SEXTANT_NETNS_STATE_${C_FIXTURE} ${state})
  set_property(GLOBAL PROPERTY SEXTANT_NETNS_HOSTS_${C_FIXTURE} ${C_HOSTS})
  if(NOT TARGET sextant_delayline)
    _sextant_netns_skip_test(netns.${C_FIXTURE}.up)
    _sextant_netns_skip_test(netns.${C_FIXTURE}.down)
  else()
    # --replace: a cluster left in this state directory by an aborted run goes first.
    add_test(NAME netns.${C_FIXTURE}.up COMMAND ${SEXTANT_NETNS_DIR}/cluster.sh up --state ${state} --replace
             --hosts ${C_HOSTS} --delay-us ${C_DELAY_US} --rate ${C_RATE}
             --delayline $<TARGET_FILE:sextant_delayline> --preload $<TARGET_FILE:sextant_ucx_nodisconnect>
             ${SEXTANT_NETNS_DEFAULT_UP_ARGS} ${SEXTANT_NETNS_EXTRA_UP_ARGS} ${C_UP_ARGS})
    add_test(NAME netns.${C_FIXTURE}.down COMMAND ${SEXTANT_NETNS_DIR}/cluster.sh down --state ${state})
    set_tests_properties(netns.${C_FIXTURE}.up netns.${C_FIXTURE}.down PROPERTIES
      LABELS validation SKIP_RETURN_CODE 77 TIMEOUT 60)
  endif()
  set_tests_properties(netns.${C_FIXTURE}.up PROPERTIES FIXTURES_SETUP ${C_FIXTURE})
  set_tests_properties(netns.${C_FIXTURE}.down PROPERTIES FIXTURES_CLEANUP ${C_FIXTURE})
endfunction()

function(sextant_netns_test)
  cmake_parse_arguments(T "" "NAME;FIXTURE;TIMEOUT"
                        "COMMAND;LABELS;ENVIRONMENT;FIXTURES_SETUP;FIXTURES_REQUIRED;DEPENDS" ${ARGN})
  if(NOT T_NAME OR NOT T_FIXTURE OR NOT T_COMMAND)
    message(FATAL_ERROR "sextant_netns_test: NAME, FIXTURE and COMMAND are required")
  endif()
  get_property(state GLOBAL PROPERTY SEXTANT_NETNS_STATE_${T_FIXTURE})
  get_property(hosts GLOBAL PROPERTY SEXTANT_NETNS_HOSTS_${T_FIXTURE})
  if(NOT state)
    message(FATAL_ERROR "sextant_netns_test(${T_NAME}): no cluster ${T_FIXTURE} (call sextant_netns_cluster first)")
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(host_list "")
  math(EXPR last "${hosts} - 1")
  foreach(i RANGE ${last})
    list(APPEND host_list h${i})
  endforeach()
  list(JOIN host_list "," host_list)
  if(NOT TARGET sextant_delayline)
    _sextant_netns_skip_test(${T_NAME})
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
    set(env SEXTANT_NETNS_STATE=${state} SEXTANT_NETNS_CLUSTER=${SEXTANT_NETNS_DIR}/cluster.sh
            SEXTANT_NETNS_HOSTS=${host_list} OMP_NUM_THREADS=1 ${T_ENVIRONMENT})
    set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${T_TIMEOUT} RUN_SERIAL TRUE
      ENVIRONMENT "${env}")
  endif()
  set(labels validation ${T_LABELS})
  set(required ${T_FIXTURE} ${T_FIXTURES_REQUIRED})
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${labels}" FIXTURES_REQUIRED "${required}")
  if(T_FIXTURES_SETUP)
    set_tests_properties(${T_NAME} PROPERTIES FIXTURES_SETUP "${T_FIXTURES_SETUP}")
  endif()
  if(T_DEPENDS)
    set_tests_properties(${T_NAME} PROPERTIES DEPENDS "${T_DEPENDS}")
  endif()
endfunction()

function(sextant_netns_add_test)
  cmake_parse_arguments(A "" "NAME;HOSTS;DELAY_US;RATE" "UP_ARGS" ${ARGN})
  sextant_netns_cluster(FIXTURE ${A_NAME} HOSTS ${A_HOSTS} DELAY_US ${A_DELAY_US} RATE ${A_RATE} UP_ARGS ${A_UP_ARGS})
  sextant_netns_test(NAME ${A_NAME} FIXTURE ${A_NAME} ${A_UNPARSED_ARGUMENTS})
endfunction()
