#pragma once
// AVX-512 forms of row_generator.h's integer mixes, shared by the CPU paths that work on eight
// 64-bit lanes (the row permutation, the dry run's checksum). x86-64 with GCC or Clang only.
#include <immintrin.h>

namespace trainrt::datagen {

/// mix64 (row_generator.h) on eight lanes: the same bits lane by lane.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m512i mix64x8(__m512i x) {
  x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 30));
  x = _mm512_mullo_epi64(x, _mm512_set1_epi64(static_cast<long long>(0xbf58476d1ce4e5b9ull)));
  x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 27));
  x = _mm512_mullo_epi64(x, _mm512_set1_epi64(static_cast<long long>(0x94d049bb133111ebull)));
  return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}

}  // namespace trainrt::datagen
