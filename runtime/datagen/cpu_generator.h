#pragma once
// Row generation on the CPU: the shared row formula over a block of rows. On x86-64 CPUs with AVX2
// the Philox words come eight blocks at a time from AVX2 registers and the rest of the formula is
// compiled for AVX2 too (picked at run time); the bits are the same either way.
#include <cstdint>

#include "datagen/model.h"

namespace trainrt::datagen {

/// Rows [first, first + count) into features (count x features, row-major) and labels (count),
/// on the fastest path this CPU has.
void generate_rows_cpu(const ModelView& model, uint64_t first, uint64_t count, float* features, float* labels);

/// Rows [first, first + count) straight into column-major buffers: feature c of row first + i at
/// columns[c * stride + i], its label at columns[features * stride + i]; the same bits as
/// generate_rows_cpu. Where this CPU and table allow it (AVX-512; classification with at most 16
/// clusters and 8 informative and 8 redundant columns); false, with nothing written, otherwise.
bool generate_columns_cpu(const ModelView& model, uint64_t first, uint64_t count, float* columns, uint64_t stride);

/// The code paths: portable (what the CUDA kernel runs), AVX2, AVX-512 (x86-64-v4).
enum class CpuPath { kPortable, kAvx2, kAvx512 };

/// Whether this build and this CPU can run a path.
bool cpu_path_available(CpuPath path);

/// generate_rows_cpu on a given path (which must be available); tests compare the paths' bits.
void generate_rows_on(CpuPath path, const ModelView& model, uint64_t first, uint64_t count, float* features,
                      float* labels);

}  // namespace trainrt::datagen
