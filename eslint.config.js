// Type-aware linting: floating and misused promises are errors (STYLE.md, "TypeScript and tooling").
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/", "node_modules/", "data/", "firmware/build/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts", "**/*.tsx"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error",
    },
  },
  { files: ["**/*.js", "**/*.cjs"], languageOptions: { globals: { process: "readonly", console: "readonly" } } },
  // The dashboard's browser modules (served as they are, no build step).
  {
    files: ["web/**/*.js"],
    languageOptions: {
      globals: Object.fromEntries(
        ["window", "document", "location", "fetch", "WebSocket", "URL", "URLSearchParams", "FormData", "Node", "CSS", "confirm", "getComputedStyle", "setTimeout", "clearTimeout", "setInterval", "console"].map((g) => [g, "readonly"]),
      ),
    },
  },
);
