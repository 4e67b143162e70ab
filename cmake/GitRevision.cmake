# Generates git_revision.cpp at every build (rewritten only when the revision
# changes), so provenance names the revision the binary was built from.
set(SEXTANT_GIT_REVISION_CPP ${CMAKE_BINARY_DIR}/generated/git_revision.cpp)
add_custom_target(sextant_git_revision
  BYPRODUCTS ${SEXTANT_GIT_REVISION_CPP}
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DOUTPUT=${SEXTANT_GIT_REVISION_CPP}
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteGitRevision.cmake
  COMMENT "Recording git revision")
