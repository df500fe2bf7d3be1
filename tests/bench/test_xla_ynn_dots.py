"""bench/xla_ynn_dots.py: YNNPACK's output tiling of XLA CPU's dots in closed form, the parts a
dot's tiles run in, and the diagnostic's table of a saved calibration's dot rows."""

from __future__ import annotations

import xla_ynn_dots as ynn_dot


def test_a_square_dot_grows_its_tile_until_the_tile_cost_cap():
    # 512 x 512 over k = 512, block_n 16: split_n 16, split_m 16; under 64 x 64 = 4,096 the tile
    # grows m (16 -> 32 -> 64: 4 x 16 > split_m), then n (4 x 16 <= 64: 16 -> 32), then m (64 ->
    # 128); 128 x 32 = 4,096 reaches the minimum area and (128 + 32) x 512 = 81,920 >= 65,536:
    # stop. Tiles: (512 / 128) x (512 / 32) = 64
    assert ynn_dot.tile(512, 512, 512) == (128, 32)
    assert ynn_dot.tiles(512, 512, 512) == 64


def test_a_dot_whose_tile_covers_its_output_is_one_task():
    # 128 x 128 over 128: 16x16 -> 32x16 -> 64x16 -> 64x32 -> 128x32 (area 4,096, cost (128 +
    # 32) x 128 = 20,480 under 65,536) -> 128x64 -> 128x128 (m and n both reached): one tile
    assert ynn_dot.tile(128, 128, 128) == (128, 128)
    assert ynn_dot.tiles(128, 128, 128) == 1
    assert ynn_dot.parts(128, 128, 128, 2) == 1.0


def test_a_gemv_is_cut_along_n_once_its_tile_costs_the_cap():
    # 1 x 1024 over 1024: min area 1 x 64; split_n 16 -> 32 -> 64 (split_m is m); (1 + 64) x
    # 1024 = 66,560 >= 65,536: stop. Tiles 1024 / 64 = 16; k over 1024 counts as 1024
    assert ynn_dot.tile(1, 1024, 1024) == (1, 64)
    assert ynn_dot.tiles(1, 1024, 1024) == 16
    assert ynn_dot.tiles(1, 1024, 4096) == 16


def test_the_tiles_run_in_tiles_over_the_busiest_cores_share_parts():
    # parts = tiles / ceil(tiles / threads)
    assert ynn_dot.parts(512, 512, 512, 2) == 2.0     # 64 tiles: 32 a core
    assert ynn_dot.parts(512, 512, 512, 8) == 8.0
    assert ynn_dot.parts(512, 512, 512, 1) == 1.0     # one core: never split
    # 1 x 192 over 1024: tile 1 x 64 (as the GEMV above): 3 tiles; on 2 cores one runs 2: 1.5
    assert ynn_dot.tiles(1, 192, 1024) == 3
    assert ynn_dot.parts(1, 192, 1024, 2) == 1.5
    assert ynn_dot.parts(1, 192, 1024, 4) == 3.0
    # 1 x 320: 5 tiles, on 4 cores 2 on the busiest: 2.5
    assert ynn_dot.parts(1, 320, 1024, 4) == 2.5


def test_the_table_lists_the_ynnpack_dot_rows_with_their_tiles_and_errors():
    rows = {"cores": 2, "rows": [
        # 2 x 512^3 = 268,435,456 FLOPs in 1,672 us: 160.5 GFLOP/s; 64 tiles, 2 parts
        {"label": "dot 512x512x512 (both arguments)", "seconds": 1672e-6},
        # Eigen (x^T g) and a batched dot: not YNNPACK dots, not listed
        {"label": "dot 64x1024x64 (x^T g)", "seconds": 180e-6},
        {"label": "batched dot 2x8x8x8", "seconds": 10e-6},
        {"label": "dot 128x128x128 (weights constant)", "seconds": 63.6e-6}]}
    ins = {"cal1": {"rows": [{"program": "dot 512x512x512 (both arguments)", "measured_us": 1672.0, "after_us": 4236.0},
                             {"program": "dot 128x128x128 (weights constant)", "measured_us": 63.6, "after_us": 63.6}]}}
    lines = ynn_dot.table(rows, ins)
    assert len(lines) == 3 and "error 1" in lines[0]
    cells = lines[1].split()
    # tile 128x32, 64 tiles, 2 parts, 160.5 GFLOP/s, error 4236 / 1672 - 1 = +153.3 %
    assert cells[-6:] == ["128x32", "64", "2", "160.5", "+153.3", "%"], lines[1]
    assert lines[2].split()[-6:] == ["128x128", "1", "1", "65.9", "+0.0", "%"], lines[2]
    assert ynn_dot.dims("dot 64x1024x64 (x^T g)") is None
    assert ynn_dot.dims("dot 48x1024x1024 (weights constant)") == (48, 1024, 1024)
