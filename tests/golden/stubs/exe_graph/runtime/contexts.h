// Test stub (not CANN): the gert:: context types used by TilingFunc / InferShape / InferDataType.
#pragma once
#include <cstddef>
#include <cstdint>

#include "graph/types.h"

namespace fe {
class PlatFormInfos;
}  // namespace fe

namespace gert {
class Shape {
public:
    size_t GetDimNum() const;
    int64_t GetDim(size_t index) const;
    void SetDimNum(size_t dimNum);
    void SetDim(size_t index, int64_t value);
};

class StorageShape {
public:
    const Shape& GetStorageShape() const;
    const Shape& GetOriginShape() const;
};

class RuntimeAttrs {
public:
    template <typename T>
    const T* GetAttrPointer(size_t index) const;
};

class TilingData {
public:
    void* GetData();
    size_t GetCapacity() const;
    void SetDataSize(size_t size);
};

class TilingContext {
public:
    const StorageShape* GetInputShape(size_t index) const;
    const StorageShape* GetOutputShape(size_t index) const;
    fe::PlatFormInfos* GetPlatformInfo() const;
    const RuntimeAttrs* GetAttrs() const;
    ge::graphStatus SetBlockDim(uint32_t blockDim);
    TilingData* GetRawTilingData();
    size_t* GetWorkspaceSizes(size_t count);
};

class InferShapeContext {
public:
    const Shape* GetInputShape(size_t index) const;
    Shape* GetOutputShape(size_t index);
};

class InferDataTypeContext {
public:
    ge::DataType GetInputDataType(size_t index) const;
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType dtype);
};
}  // namespace gert
