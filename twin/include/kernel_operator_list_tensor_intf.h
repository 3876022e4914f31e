// ListTensorDesc / TensorDesc, included separately as with CANN (#include "kernel_operator_list_tensor_intf.h").
#pragma once
#include "kernel_operator.h"
#include "twin/utils/list_tensor_desc.h"
