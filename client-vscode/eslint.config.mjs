// Type-aware lint of the extension sources; plain recommended rules for the build and test scripts.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'bundled/', 'node_modules/', 'out/', '*.vsix'] },
  js.configs.recommended,
  {
    files: ['**/*.mjs'],
    languageOptions: {
      globals: { console: 'readonly', process: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', fetch: 'readonly' },
    },
  },
  {
    // code passed to page.evaluate() runs in the browser
    files: ['test/e2e/**/*.mjs'],
    languageOptions: { globals: { navigator: 'readonly', document: 'readonly', window: 'readonly' } },
  },
  {
    // the test-only extension that test/e2e installs next to Pi Memory (CommonJS, in the extension host)
    files: ['test/e2e/**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', exports: 'writable', module: 'writable' } },
  },
  {
    files: ['src/**/*.ts'],
    extends: [...tseslint.configs.strictTypeChecked, ...tseslint.configs.stylisticTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      eqeqeq: 'error',
      curly: 'error',
      'no-restricted-syntax': [
        'error',
        { selector: "MemberExpression[property.name=/^(innerHTML|outerHTML)$/]", message: 'Build DOM nodes with textContent; transcript text must never be parsed as HTML.' },
        { selector: "CallExpression[callee.property.name=/^(insertAdjacentHTML|write|writeln)$/]", message: 'No HTML parsing of data.' },
      ],
      '@typescript-eslint/no-namespace': 'off',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/explicit-function-return-type': ['error', { allowExpressions: true }],
      '@typescript-eslint/no-extraneous-class': 'off',
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // vscode.Disposable is a class, but VS Code's disposables (status bar items, event subscriptions) are interfaces
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
    },
  },
);
