// ESLint: typescript-eslint's strict rules on everything that is compiled (src, simulator,
// bench, scripts, test). Run by `npm test` (npm run lint); formatting is prettier's, not ESLint's.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tools/**', '.test-data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.strict,
  {
    languageOptions: { ecmaVersion: 2022, sourceType: 'module' },
    rules: {
      // tsc (noUnusedLocals/Parameters) reports these already; `_name` marks a deliberate one.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Tests and tools assert what they rely on; a `!` that is wrong fails the test or the run.
    files: ['test/**', 'bench/**', 'simulator/**'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' },
  },
  {
    // Tests build variants of configurations and environments by deleting named keys.
    files: ['test/**'],
    rules: { '@typescript-eslint/no-dynamic-delete': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: Object.fromEntries(
        ['require', 'module', 'process', 'console', '__dirname', 'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'URL', 'Buffer'].map((g) => [
          g,
          'readonly',
        ]),
      ),
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
