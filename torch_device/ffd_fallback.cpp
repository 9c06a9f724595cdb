/* Every ATen op without a FusionFlow kernel and without a decomposition runs on
 * PyTorch's CPU kernel through copies, never silently: the first time per op it warns,
 * and every time it counts (fusionflow.torch_device.fallback_counts()). In strict mode
 * (set_strict(True)) it refuses instead, so a test can prove a program needs none. */
#include <ATen/native/CPUFallback.h>

#include <map>
#include <mutex>

#include "ffd.h"

namespace {

std::mutex counts_mutex;
std::map<std::string, int64_t> counts;
std::atomic<bool> strict{false};

void fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack)
{
    const c10::OperatorName &on = op.schema().operator_name();
    std::string name = on.overload_name.empty() ? on.name : on.name + "." + on.overload_name;
    TORCH_CHECK(!strict.load(), "fusionflow device: ", name, " has no FusionFlow kernel (strict mode refuses PyTorch's ",
                "CPU fallback)");
    bool first;
    {
        std::lock_guard<std::mutex> lock(counts_mutex);
        first = counts[name]++ == 0;
    }
    if (first)
        TORCH_WARN("fusionflow device: ", name, " has no FusionFlow kernel; it runs on PyTorch's CPU kernel through ",
                   "copies (counted in fusionflow.torch_device.fallback_counts())");
    at::native::cpu_fallback(op, stack);
}

std::vector<std::string> op_fallback_names()
{
    std::lock_guard<std::mutex> lock(counts_mutex);
    std::vector<std::string> names;
    for (const auto &kv : counts) names.push_back(kv.first);
    return names;
}

std::vector<int64_t> op_fallback_counts()
{
    std::lock_guard<std::mutex> lock(counts_mutex);
    std::vector<int64_t> n;
    for (const auto &kv : counts) n.push_back(kv.second);
    return n;
}

void op_reset_fallback_counts()
{
    std::lock_guard<std::mutex> lock(counts_mutex);
    counts.clear();
}

bool op_set_strict(bool on) { return strict.exchange(on); }

} // namespace

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>()); }

TORCH_LIBRARY_FRAGMENT(fusionflow, m)
{
    m.def("fallback_names() -> str[]", &op_fallback_names);
    m.def("fallback_counts() -> int[]", &op_fallback_counts);
    m.def("reset_fallback_counts() -> ()", &op_reset_fallback_counts);
    m.def("set_strict(bool on) -> bool", &op_set_strict);
}
