// Test stub (not CANN): OpDef builder API as used by a generated op_host .cpp.
#pragma once
#include <vector>

#include "exe_graph/runtime/contexts.h"
#include "graph/types.h"

namespace gert {
using InferShapeFunc = ge::graphStatus (*)(InferShapeContext*);
using InferDataTypeFunc = ge::graphStatus (*)(InferDataTypeContext*);
using TilingFunc = ge::graphStatus (*)(TilingContext*);
}  // namespace gert

namespace ops {
enum Option { REQUIRED, OPTIONAL, DYNAMIC };

class OpParamDef {
public:
    OpParamDef& ParamType(Option type);
    OpParamDef& DataType(std::vector<ge::DataType> types);
    OpParamDef& Format(std::vector<ge::Format> formats);
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format> formats);
};

class OpAttrDef {
public:
    OpAttrDef& AttrType(Option type);
    OpAttrDef& Float(float value);
    OpAttrDef& Int(int64_t value);
};

class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(gert::TilingFunc func);
    OpAICoreDef& AddConfig(const char* soc);
};

class OpDef {
public:
    explicit OpDef(const char* type);
    OpParamDef& Input(const char* name);
    OpParamDef& Output(const char* name);
    OpAttrDef& Attr(const char* name);
    OpDef& SetInferShape(gert::InferShapeFunc func);
    OpDef& SetInferDataType(gert::InferDataTypeFunc func);
    OpAICoreDef& AICore();
};
}  // namespace ops

#define OP_ADD(op_type) static const op_type acx_op_instance_##op_type(#op_type)
