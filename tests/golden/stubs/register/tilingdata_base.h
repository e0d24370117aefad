// Test stub (not CANN): tiling data class macros with the documented shape of use:
//   BEGIN_TILING_DATA_DEF(Cls) TILING_DATA_FIELD_DEF(type, f); ... END_TILING_DATA_DEF;
//   REGISTER_TILING_DATA_CLASS(OpType, Cls)
// Each field gets set_<f>(type) / get_<f>(), as in CANN.
#pragma once
#include <cstddef>
#include <cstdint>

#define BEGIN_TILING_DATA_DEF(name)                  \
    class name {                                     \
    public:                                          \
        void SaveToBuffer(void* data, size_t cap);   \
        size_t GetDataSize() const;

#define TILING_DATA_FIELD_DEF(type, field)           \
    void set_##field(type value) { field##_ = value; } \
    type get_##field() const { return field##_; }    \
                                                     \
private:                                             \
    type field##_ = 0;                               \
                                                     \
public:                                              \
    static_assert(true, "")

#define END_TILING_DATA_DEF }

#define REGISTER_TILING_DATA_CLASS(op_type, class_name) \
    struct AcxRegistered_##op_type {                    \
        class_name data;                                \
    };
