// Test stub (not torch_npu): the current-stream accessor a torch_npu extension uses.
#pragma once
#include "acl/acl.h"

namespace c10_npu {
class NPUStream {
public:
    aclrtStream stream() const;
};
NPUStream getCurrentNPUStream();
}  // namespace c10_npu
