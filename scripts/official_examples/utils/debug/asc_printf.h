// The include path CANN gives kernels for asc_printf; in the twin these APIs come with kernel_operator.h.
#pragma once
#include "kernel_operator.h"
