// kjudge lite: see kjudge_lite/core.h
#pragma once
#include <kjudge_lite/core.h>
