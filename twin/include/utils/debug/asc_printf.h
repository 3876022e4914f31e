// printf / PRINTF under their documented header path (the twin defines them in twin/utils/print.h).
#pragma once
#include "kernel_operator.h"
