# SEXTANT_PYTHON: an interpreter that imports h5py, numpy and matplotlib (reports,
# the Python reader's tests). Debian's /usr/bin/python3 first: a pyenv python3
# earlier on PATH does not see Debian's packages.
find_program(SEXTANT_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(SEXTANT_PYTHON)
  execute_process(COMMAND ${SEXTANT_PYTHON} -c "import h5py, numpy, matplotlib"
                  RESULT_VARIABLE sextant_python_missing OUTPUT_QUIET ERROR_QUIET)
endif()
if(NOT SEXTANT_PYTHON OR sextant_python_missing)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  set(SEXTANT_PYTHON ${Python3_EXECUTABLE} CACHE FILEPATH "Python with h5py, numpy, matplotlib" FORCE)
endif()
message(STATUS "sextant: Python for reports and readers: ${SEXTANT_PYTHON}")
