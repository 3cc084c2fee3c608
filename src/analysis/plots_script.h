// The matplotlib script that draws analyze's figures (text of plots.py; see plots_script.cpp).
#pragma once

namespace headroom::analysis {

const char* plots_script();

}  // namespace headroom::analysis
