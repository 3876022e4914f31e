// assert / ascendc_assert under their documented header path (the twin defines them in twin/utils/assert.h).
#pragma once
#include "kernel_operator.h"
#include "twin/utils/assert.h"
