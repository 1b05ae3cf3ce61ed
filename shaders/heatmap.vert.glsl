#version 330 core
// A full-screen triangle without vertex buffers (a core profile still needs a bound VAO).
// uv runs 0..1 across the target; the fragment shader maps it to heatmap cells.
out vec2 v_uv;
void main() {
  vec2 corner = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));  // (0,0) (2,0) (0,2)
  v_uv = corner;
  gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
