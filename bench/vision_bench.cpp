// vision_bench: seconds to encode one image with a vision projector (the
// gemma3 encoder of engine/vision), medians over repeats, as JSON on
// stdout; --dump writes the embeddings (f32 [n_tokens, n_embd], little
// endian) for a comparison with llama.cpp's (bench/peers.py vision).
#include <cstdio>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "bench/bench_timing.h"
#include "engine/vision/vision_encoder.h"

namespace {

const char* kUsage =
    "usage: vision_bench --mmproj FILE --image FILE [-t THREADS] [-r REPEATS] [--dump OUT.f32]\n"
    "  Encodes the image REPEATS times (default 3) on THREADS CPU threads (default 2) and prints\n"
    "  {\"engine\", \"seconds\": [...], \"median_s\", \"n_tokens\", \"n_embd\"} as JSON.\n";

}  // namespace

int main(int argc, char** argv) {
  std::string mmproj, image_path, dump;
  int threads = 2, repeats = 3;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    if (args.flag() == "--mmproj") mmproj = args.value();
    else if (args.flag() == "--image") image_path = args.value();
    else if (args.flag() == "-t") threads = args.int_value();
    else if (args.flag() == "-r") repeats = args.int_value();
    else if (args.flag() == "--dump") dump = args.value();
    else args.usage();
  }
  if (mmproj.empty() || image_path.empty() || threads < 1 || repeats < 1) args.usage();
  try {
    const std::string bytes = tc::bench::read_file("vision_bench", image_path);
    const auto image = tc::vision::decode_image(std::as_bytes(std::span(bytes.data(), bytes.size())));
    tc::vision::VisionEncoder encoder(tc::vision::VisionModel::load(mmproj), threads);
    std::vector<double> seconds;
    std::vector<float> out;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = tc::bench::Clock::now();
      out = encoder.encode(image);
      seconds.push_back(tc::bench::seconds_since(t0));
      std::fprintf(stderr, "vision_bench: encode %d of %d: %.3f s\n", r + 1, repeats, seconds.back());
    }
    if (!dump.empty()) {
      std::ofstream f(dump, std::ios::binary);
      f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size() * sizeof(float)));
      if (!f) throw std::runtime_error("cannot write " + dump);
    }
    const auto& spec = encoder.model().spec();
    std::printf("{\"engine\": \"thermocline\", \"seconds\": [");
    for (size_t i = 0; i < seconds.size(); ++i) std::printf("%s%.4f", i ? ", " : "", seconds[i]);
    std::printf("], \"median_s\": %.4f, \"n_tokens\": %d, \"n_embd\": %d}\n", tc::bench::median(seconds),
                spec.n_image_tokens(), spec.n_embd_text);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vision_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
