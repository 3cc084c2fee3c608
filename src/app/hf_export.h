// export_hf: a Headroom checkpoint (a .h5 file, or a run directory meaning its latest) → a Hugging
// Face model directory: config.json of the family the model can be expressed as (app/hf_config.h:
// qk_norm none + pre → Llama, head + pre → Qwen 3, layer + post → OLMo 2, or OLMo 3 with sliding
// layers), model.safetensors (F32 by default, so export → import gives back every tensor bit for
// bit; --dtype bf16 halves the size), and the tokenizer when the checkpoint holds one. Whatever the
// family cannot express is refused naming the keys and values. One process; the whole model is held
// in memory once (plus its gradient arena).
#pragma once

namespace headroom::app {

int run_export_hf(int argc, char** argv);

}  // namespace headroom::app
