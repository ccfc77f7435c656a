// stet._core's training side (stet.torch): a model whose float weights live in
// caller memory (torch parameters), run by the engine's own Forward and
// scored by the sampler's own log-softmax, so a trainer's log-probabilities
// are the sampler's bit for bit. Also the array checks both sides share.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "base/status.h"
#include "format/gguf.h"
#include "numerics/dtype.h"

namespace stet::python {

using Array = nanobind::ndarray<nanobind::ro, nanobind::c_contig, nanobind::device::cpu>;

// The element type of a weights array: its dtype, or `hint` ("bf16", "f16")
// for 16-bit integers carrying raw half-precision bits; TypeError otherwise.
DType ArrayType(const Array& a, const std::string& name, const std::string& hint);

// A failed Status as the Python exception of its kind (ValueError, FileNotFoundError,
// OSError, RuntimeError).
[[noreturn]] void Raise(const Status& st);

// Every tensor of the file: (name, type, shape as Python writes it: outermost first).
nanobind::list TensorList(const gguf::GgufFile& file);

// Registers _core.Policy.
void BindPolicy(nanobind::module_& m);

}  // namespace stet::python
