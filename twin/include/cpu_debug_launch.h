// `.asc` sources include this under ASCENDC_CPU_DEBUG (which the twin defines) to get the CPU-mode target of their
// `<<<...>>>` launches, AscendC::AscCPUKernelLaunch (twin/launch/cpu_launch.h). Unlike CANN's header it does not
// pull in acl/acl.h: the twin has no host runtime of its own.
#pragma once
#include "kernel_operator.h"
