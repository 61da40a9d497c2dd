// kjudge lite: see kjudge_lite/cuda.h
#pragma once
#include <kjudge_lite/cuda.h>
