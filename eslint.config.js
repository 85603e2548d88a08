// Lint: typescript-eslint's type-checked rules over every TypeScript file the project owns. The rules that
// matter most here are the promise rules: a floating promise in the node daemon is a pass nobody awaits.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "coverage/**", "test/fixtures/**", "bench/.build/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      // Express error handlers and omitted tuple members need named parameters they do not read.
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" },
      ],
      // A handle assigned once, after closures that read it were made (the daemon in node-daemon/main.ts).
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
      // Implementations of async interfaces (the daemon's KubeApi, fakes of it) may answer at once.
      "@typescript-eslint/require-await": "off",
    },
  },
  {
    // Tests read JSON answers from servers and processes as untyped data and assert on them field by field;
    // typing every such body would add casts, not safety. The promise rules stay on here too. testkit/ is
    // what tests and benchmarks share (the test apiserver, processes, the Metacontroller emulator): the same.
    files: ["test/**/*.ts", "bench/**/*.ts", "testkit/**/*.ts"],
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-return": "off",
    },
  },
  { files: ["**/*.js", "**/*.cjs"], ...tseslint.configs.disableTypeChecked },
  {
    // Mocha loads its reporter with require(): a CommonJS file run by Node.
    files: ["**/*.cjs"],
    languageOptions: {
      sourceType: "commonjs",
      globals: { require: "readonly", module: "writable", process: "readonly" },
    },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
);
