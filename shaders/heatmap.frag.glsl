#version 330 core
// Draws a (rows x cols) float texture as a heatmap through a perceptually uniform colormap.
//   t = clamp((value - u_min) / (u_max - u_min), 0, 1),  colour = colormap(t)
// Only the window u_window (first column, first row, columns, rows: in cells) is drawn across the target, so a
// zoomed view shows part of the map.
// A NaN value marks a cell as blocked (a masked attention cell): drawn as grey diagonal hatching, so that
// "blocked" never looks like "small". Row 0 is drawn at the top.
in vec2 v_uv;
out vec4 frag_colour;

uniform sampler2D u_values;   // R32F, width = cols, height = rows
uniform float u_min;
uniform float u_max;
uniform int u_colormap;       // 0 viridis, 1 magma, 2 diverging
uniform vec4 u_window;        // (col0, row0, cols, rows) of the map shown, in cells
uniform float u_grid;         // grid line width in pixels (0: none)
uniform vec2 u_target_px;     // size of the target in pixels

// Polynomial fits of matplotlib's viridis and magma (Matt Zucker, public domain); within 0.013 (viridis) and
// 0.02 (magma) of the tables.
vec3 viridis(float t) {
  const vec3 c0 = vec3(0.2777273272234177, 0.005407344544966578, 0.3340998053353061);
  const vec3 c1 = vec3(0.1050930431085774, 1.404613529898575, 1.384590162594685);
  const vec3 c2 = vec3(-0.3308618287255563, 0.214847559468213, 0.09509516302823659);
  const vec3 c3 = vec3(-4.634230498983486, -5.799100973351585, -19.33244095627987);
  const vec3 c4 = vec3(6.228269936347081, 14.17993336680509, 56.69055260068105);
  const vec3 c5 = vec3(4.776384997670288, -13.74514537774601, -65.35303263337234);
  const vec3 c6 = vec3(-5.435455855934631, 4.645852612178535, 26.3124352495832);
  return c0 + t * (c1 + t * (c2 + t * (c3 + t * (c4 + t * (c5 + t * c6)))));
}
vec3 magma(float t) {
  const vec3 c0 = vec3(-0.002136485053939582, -0.000749655052795221, -0.005386127855323933);
  const vec3 c1 = vec3(0.2516605407371642, 0.6775232436837668, 2.494026599312351);
  const vec3 c2 = vec3(8.353717279216625, -3.577719514958484, 0.3144679030132573);
  const vec3 c3 = vec3(-27.66873308576866, 14.26473078096533, -13.64921318813922);
  const vec3 c4 = vec3(52.17613981234068, -27.94360607168351, 12.94416944238394);
  const vec3 c5 = vec3(-50.76852536473588, 29.04658282127291, 4.23415299384598);
  const vec3 c6 = vec3(18.65570506591883, -11.48977351997711, -5.601961508734096);
  return c0 + t * (c1 + t * (c2 + t * (c3 + t * (c4 + t * (c5 + t * c6)))));
}

// Diverging, for signed values (the range symmetric about 0): straight lines in CIELAB from a dark grey at 0
// (L* 12) to a blue (L* 70, a* -6, b* -40) for the most negative value and an orange (L* 70, a* 36, b* 50) for
// the most positive. Lightness grows linearly with |value| on both sides: perceptually uniform, symmetric,
// brighter = larger, as on the sequential maps. Same as colormap.cpp.
vec3 lab_to_srgb(vec3 lab) {
  float fy = (lab.x + 16.0) / 116.0;
  vec3 f = vec3(fy + lab.y / 500.0, fy, fy - lab.z / 200.0);
  vec3 cubed = f * f * f;
  vec3 xyz = mix((f - 16.0 / 116.0) / 7.787, cubed, step(0.008856, cubed)) * vec3(0.95047, 1.0, 1.08883);
  vec3 lin = mat3(3.2404542, -0.9692660, 0.0556434,  -1.5371385, 1.8760108, -0.2040259,
                  -0.4985314, 0.0415560, 1.0572252) * xyz;
  lin = clamp(lin, 0.0, 1.0);
  return mix(12.92 * lin, 1.055 * pow(lin, vec3(1.0 / 2.4)) - 0.055, step(0.0031308, lin));
}
vec3 diverging(float t) {
  float s = 2.0 * t - 1.0;  // -1 .. 1
  vec3 end = s < 0.0 ? vec3(70.0, -6.0, -40.0) : vec3(70.0, 36.0, 50.0);
  return lab_to_srgb(mix(vec3(12.0, 0.0, 0.0), end, abs(s)));
}

void main() {
  ivec2 size = textureSize(u_values, 0);                        // (cols, rows)
  vec2 cell_f = u_window.xy + vec2(v_uv.x, 1.0 - v_uv.y) * u_window.zw;  // row 0 at the top
  ivec2 cell = clamp(ivec2(floor(cell_f)), ivec2(0), size - 1);
  float value = texelFetch(u_values, cell, 0).r;

  vec3 colour;
  if (isnan(value)) {
    float stripe = mod(gl_FragCoord.x + gl_FragCoord.y, 8.0);
    colour = stripe < 3.0 ? vec3(0.62) : vec3(0.16);
  } else {
    float span = u_max - u_min;
    float t = span > 0.0 ? clamp((value - u_min) / span, 0.0, 1.0) : 0.5;
    colour = clamp(u_colormap == 2 ? diverging(t) : u_colormap == 1 ? magma(t) : viridis(t), 0.0, 1.0);
  }
  if (u_grid > 0.0) {
    vec2 cell_px = u_target_px / u_window.zw;
    vec2 inside = fract(cell_f) * cell_px;                      // pixel offset inside the cell
    if (min(cell_px.x, cell_px.y) >= 6.0 && (inside.x < u_grid || inside.y < u_grid)) colour *= 0.35;
  }
  frag_colour = vec4(colour, 1.0);
}
