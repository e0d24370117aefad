// Test stub (not CANN): platform queries used by TilingFunc.
#pragma once
#include <cstdint>

#include "exe_graph/runtime/contexts.h"

namespace platform_ascendc {
enum class CoreMemType { L0_A, L0_B, L0_C, L1, L2, UB, HBM };

class PlatformAscendC {
public:
    explicit PlatformAscendC(fe::PlatFormInfos* info);
    uint32_t GetCoreNumAic() const;
    uint32_t GetCoreNumAiv() const;
    void GetCoreMemSize(CoreMemType type, uint64_t& size) const;
    uint32_t GetLibApiWorkSpaceSize() const;
};
}  // namespace platform_ascendc
