// The configuration strings that choose behaviour, as enums. Their INI text is read once, at the
// configuration boundary (schema.h's add_choice_key); code below compares enums, so a misspelt
// choice is a compile error instead of a branch that is silently never taken.
#pragma once

#include "ops.h"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace headroom::config {

enum class QkNorm { kNone, kLayer, kHead };
enum class NormOrder { kPre, kPost };
enum class RopeScaling { kNone, kYarn, kLlama3 };
enum class YarnLayers { kAll, kFull };
enum class Schedule { kCosine, kWsd, kLinear, kConstant };
enum class Nonfinite { kStop, kSkip };
enum class Device { kAuto, kCpu, kCuda };  // kAuto is resolved at a stage's start (app/device_choice.h)
enum class Sampler { kAuto, kWindows, kDocuments };
enum class SyntheticLoss { kAnswer, kAll };
// What the backward pass recomputes instead of keeping from the forward pass (train.recompute).
enum class Recompute { kNone, kSelective, kFull };
enum class PromptChoice { kAuto, kBase, kInstruction, kChat };  // evaluate's eval.template
// The synthetic retrieval tasks (data/synthetic.h) that data.synthetic_tasks, data.warmup_tasks
// and train.probe_tasks list (config/task_names.h).
enum class SyntheticTask { kKv, kNeedle, kNiah, kNiahKeys, kNiahMix, kVt, kDocqa, kCopy, kWords, kUuids };
// The training stages (app/training_stage.h); their names are the programs', the default run
// directories' and a checkpoint's `stage` attribute.
enum class Stage { kPretrain, kExtend, kSft };
using AttentionKernel = kernels::AttentionKernel;  // the CUDA table's attention (ops.h)
// What the gradients travel and are summed in over the cp × dp ranks (parallel.grad_reduce_dtype).
enum class GradReduceDtype { kFp32, kBf16 };

// Each enum's INI names, in the order --help lists them.
template <class E>
struct ChoiceNames;

template <class E, std::size_t N>
using NameList = std::array<std::pair<E, std::string_view>, N>;

template <>
struct ChoiceNames<QkNorm> {
  static constexpr NameList<QkNorm, 3> list{
      {{QkNorm::kNone, "none"}, {QkNorm::kLayer, "layer"}, {QkNorm::kHead, "head"}}};
};
template <>
struct ChoiceNames<NormOrder> {
  static constexpr NameList<NormOrder, 2> list{{{NormOrder::kPre, "pre"}, {NormOrder::kPost, "post"}}};
};
template <>
struct ChoiceNames<RopeScaling> {
  static constexpr NameList<RopeScaling, 3> list{
      {{RopeScaling::kNone, "none"}, {RopeScaling::kYarn, "yarn"}, {RopeScaling::kLlama3, "llama3"}}};
};
template <>
struct ChoiceNames<YarnLayers> {
  static constexpr NameList<YarnLayers, 2> list{{{YarnLayers::kAll, "all"}, {YarnLayers::kFull, "full"}}};
};
template <>
struct ChoiceNames<Schedule> {
  static constexpr NameList<Schedule, 4> list{{{Schedule::kCosine, "cosine"},
                                               {Schedule::kWsd, "wsd"},
                                               {Schedule::kLinear, "linear"},
                                               {Schedule::kConstant, "constant"}}};
};
template <>
struct ChoiceNames<Nonfinite> {
  static constexpr NameList<Nonfinite, 2> list{{{Nonfinite::kStop, "stop"}, {Nonfinite::kSkip, "skip"}}};
};
template <>
struct ChoiceNames<Device> {
  static constexpr NameList<Device, 3> list{{{Device::kAuto, "auto"}, {Device::kCpu, "cpu"}, {Device::kCuda, "cuda"}}};
};
template <>
struct ChoiceNames<AttentionKernel> {
  static constexpr NameList<AttentionKernel, 4> list{{{AttentionKernel::kAuto, "auto"},
                                                      {AttentionKernel::kFlash, "flash"},
                                                      {AttentionKernel::kSimt, "simt"},
                                                      {AttentionKernel::kBlocked, "blocked"}}};
};
template <>
struct ChoiceNames<Sampler> {
  static constexpr NameList<Sampler, 3> list{
      {{Sampler::kAuto, "auto"}, {Sampler::kWindows, "windows"}, {Sampler::kDocuments, "documents"}}};
};
template <>
struct ChoiceNames<SyntheticLoss> {
  static constexpr NameList<SyntheticLoss, 2> list{{{SyntheticLoss::kAnswer, "answer"}, {SyntheticLoss::kAll, "all"}}};
};
template <>
struct ChoiceNames<GradReduceDtype> {
  static constexpr NameList<GradReduceDtype, 2> list{
      {{GradReduceDtype::kFp32, "fp32"}, {GradReduceDtype::kBf16, "bf16"}}};
};
template <>
struct ChoiceNames<Recompute> {
  static constexpr NameList<Recompute, 3> list{
      {{Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"}}};
};

template <>
struct ChoiceNames<SyntheticTask> {
  static constexpr NameList<SyntheticTask, 10> list{{{SyntheticTask::kKv, "kv"},
                                                     {SyntheticTask::kNeedle, "needle"},
                                                     {SyntheticTask::kNiah, "niah"},
                                                     {SyntheticTask::kNiahKeys, "niah_keys"},
                                                     {SyntheticTask::kNiahMix, "niah_mix"},
                                                     {SyntheticTask::kVt, "vt"},
                                                     {SyntheticTask::kDocqa, "docqa"},
                                                     {SyntheticTask::kCopy, "copy"},
                                                     {SyntheticTask::kWords, "words"},
                                                     {SyntheticTask::kUuids, "uuids"}}};
};
template <>
struct ChoiceNames<Stage> {
  static constexpr NameList<Stage, 3> list{
      {{Stage::kPretrain, "pretrain"}, {Stage::kExtend, "extend"}, {Stage::kSft, "sft"}}};
};

template <>
struct ChoiceNames<PromptChoice> {
  static constexpr NameList<PromptChoice, 4> list{{{PromptChoice::kAuto, "auto"},
                                                   {PromptChoice::kBase, "base"},
                                                   {PromptChoice::kInstruction, "instruction"},
                                                   {PromptChoice::kChat, "chat"}}};
};

template <class E>
concept Choice = requires {
  ChoiceNames<E>::list;
};

// The INI name of a value ("layer" for QkNorm::kLayer).
template <Choice E>
std::string name_of(E e) {
  for (const auto& [v, n] : ChoiceNames<E>::list)
    if (v == e) return std::string(n);
  return "?";
}

// The value an INI name stands for; empty when it names none.
template <Choice E>
std::optional<E> choice_from(std::string_view text) {
  for (const auto& [v, n] : ChoiceNames<E>::list)
    if (n == text) return v;
  return std::nullopt;
}

// "none, layer, head".
template <Choice E>
std::string choice_list() {
  std::string out;
  for (const auto& [v, n] : ChoiceNames<E>::list) out.append(out.empty() ? "" : ", ").append(n);
  return out;
}

}  // namespace headroom::config
