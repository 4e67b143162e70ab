// consumer MODEL: the installed version, then predicts an 8-byte ping-pong and a 1 MiB allreduce.
#include <cstdio>
#include <exception>

#include "sextant/core/version.hpp"
#include "sextant/models/model_file.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer MODEL\n");
    return 2;
  }
  try {
    const auto file = sextant::model::read_model_file(argv[1]);
    const auto& model = sextant::model::comm_part(file, argv[1]);
    auto ping = model.predict("pingpong", 8, 2, "world", "byte");
    auto ar = model.predict("allreduce", 1 << 20, 2, "world", "float32");
    std::printf("sextant %s\nfits %zu\npingpong_8B_s %.17g\nallreduce_1MiB_s %.17g\n", SEXTANT_VERSION, model.fits.size(), ping.seconds, ar.seconds);
    return ping.seconds > 0 && ar.seconds > ping.seconds ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
