// ESLint for the TypeScript client package (`make lint`), the analysis service's rules:
// typescript-eslint's recommended rules with type information. The generated stubs (src/gen) are
// checked by `make proto-check`, not by style rules.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "src/gen/**", "eslint.config.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      // The examples' tsconfig covers the sources too, and resolves the package's own name.
      parserOptions: { project: "./tsconfig.examples.json", tsconfigRootDir: import.meta.dirname },
    },
  },
);
