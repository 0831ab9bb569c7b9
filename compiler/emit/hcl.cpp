#include "emit/hcl.h"
