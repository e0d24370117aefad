// Test stub (not CANN): the ge:: names the generated op_host code uses.
#pragma once
#include <cstdint>

namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFFu;

enum DataType { DT_FLOAT, DT_FLOAT16, DT_BF16, DT_INT32, DT_INT8, DT_UINT8, DT_BOOL };
enum Format { FORMAT_ND };
}  // namespace ge
