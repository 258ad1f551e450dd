// The switch of kernels::expand_depthwise's kept rows (conv_expand_depthwise.cpp): a band's input
// rows that the band its thread ran before also read are moved up in the band buffer instead of
// expanded again.
#pragma once

namespace kiln::kernels::detail {

// KILN_EXPAND_KEEP_ROWS=0 in the environment at start-up turns it off (every band expands all the
// rows its windows reach: an A/B between processes); in-process A/B harnesses flip it between
// calls. Same floats either way: a kept row is the bits the same expand wrote.
extern bool expand_keeps_rows;

}  // namespace kiln::kernels::detail
