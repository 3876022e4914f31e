// The CPU twin of Ascend C: `#include "kernel_operator.h"` gives kernel sources the AscendC API subset of dav-2201
// (Atlas A2/A3) with the official names and signatures, executed on the CPU with strict checks and a trace.
#pragma once
#include "twin/core_types.h"
#include "twin/runtime.h"
#include "twin/launch_state.h"
#include "twin/tensor.h"
#include "twin/sys_var.h"
#include "twin/sync.h"
#include "twin/pipe.h"
#include "twin/data_copy.h"
#include "twin/cube_data_copy.h"
#include "twin/launch.h"
#include "twin/buf_pool.h"
#include "twin/mem_allocator.h"
#include "twin/tiling_macros.h"
