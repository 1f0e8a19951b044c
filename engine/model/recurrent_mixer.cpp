// Picking a model's recurrent mixer (see recurrent_mixer.h).
#include "engine/model/recurrent_mixer.h"

#include "engine/model/delta_net_block.h"
#include "engine/model/mamba1_block.h"
#include "engine/model/mamba2_block.h"
#include "engine/model/short_conv_block.h"

namespace tc::model {

std::unique_ptr<RecurrentMixer> make_recurrent_mixer(const ModelSpec& spec, kernels::Backend& backend) {
  if (spec.short_conv_taps > 0) return std::make_unique<ShortConvBlock>(spec, backend);
  if (spec.runs_mamba1()) return std::make_unique<Mamba1Block>(spec, backend);
  if (spec.runs_mamba2()) return std::make_unique<Mamba2Block>(spec, backend);
  return std::make_unique<DeltaNetBlock>(spec, backend);
}

}  // namespace tc::model
