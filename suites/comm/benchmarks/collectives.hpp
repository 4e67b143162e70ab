#pragma once
// What every descriptor file of benchmarks/ includes: the descriptor type and the
// helpers they share (benchmark.hpp's detail::). Each file defines its descriptors
// `extern const` (registry.cpp declares and lists them).
#include "suites/comm/benchmark.hpp"
