// Fills one ISA's kernel table. Included last inside the ISA namespace, after the
// algorithm .inl files, with constexpr GMR, GNR, KC, MC, NC (the GEMM's tile and blocks), MR,
// NR (the direct convolution's tile) and the ISA tag defined.
KernelTable make_table() {
  KernelTable t;
  t.isa = kIsa;
  t.simd_width = V::W;
  t.gemm = GemmBlocking{GMR, GNR, KC, MC, NC};
  t.conv_shape = ConvTileShape{MR, NR};
  fill_tiles<GMR>(t);
  t.tile_rows_strip = gemm_tile_rows_strip;
  t.tile_col_strip = gemm_tile_col_strip;
  t.tile_rows_col_strip = gemm_tile_rows_col_strip;
  t.gemv_panels = gemv_panels;
  t.pack_row_panels = pack_row_panels;
  fill_conv_tiles<MR, 1>(t);
  fill_conv_tiles<MR, 2>(t);
  fill_wraps<1>(t);
  fill_wraps<2>(t);
  fill_conv_tiles<MR, 8>(t);
  fill_conv_tiles<MR, 16>(t);
  fill_wraps<8>(t);
  fill_wraps<16>(t);
  if constexpr (NR / V::W % 2 == 0) {
    t.conv_tile_half[0] = conv_tile<MR, NR / V::W / 2, 1>;
    t.conv_tile_half[1] = conv_tile<MR, NR / V::W / 2, 2>;
    t.conv_tile_half_blk[0] = conv_tile<MR, NR / V::W / 2, 8>;
    t.conv_tile_half_blk[1] = conv_tile<MR, NR / V::W / 2, 16>;
  }
  if constexpr (V::W == 16 && NR == 2 * V::W) {  // AVX-512: 24 of a panel's 32 columns
    t.conv_tile_three_quarter[0] = conv_tile<MR, 2, 1, true>;
    t.conv_tile_three_quarter[1] = conv_tile<MR, 2, 2, true>;
    t.conv_tile_three_quarter_blk[0] = conv_tile<MR, 2, 8, true>;
    t.conv_tile_three_quarter_blk[1] = conv_tile<MR, 2, 16, true>;
    fill_conv_1x1<kConv1x1Rows>(t);
    fill_p64_tiles(t);
    fill_edge_rows(t);
  }
  t.epilogue_tile = epilogue_tile;
  t.epilogue_copy = epilogue_copy;
  t.epilogue_blocks = epilogue_blocks;
  t.softmax_row = softmax_row;
  t.layer_norm_row = layer_norm_row;
  t.depthwise_grid = depthwise_grid;
  t.depthwise_plane = depthwise_plane;
  t.depthwise_block = depthwise_block;
  t.depthwise_block_wants_apart = depthwise_block_wants_apart;
  t.max_grid = max_grid;
  t.max_blocked_row = max_blocked_row;
  t.max_pool_3x3s2_row = max_pool_3x3s2_row;
  t.sum_row = sum_row;
  t.sum_block_rows = sum_block_rows;
  t.pack_a_runs = pack_a_runs;
  t.transpose = transpose_blocks;
  t.transpose_epilogue = transpose_epilogue;
  t.attention_tile = attention_tile;
  t.strided_copy = strided_copy;
  if constexpr (GMR <= V::W) t.pack_a_panel = pack_a_panel_blocks;
  else t.pack_a_panel = pack_a_panel_portable;
  return t;
}
