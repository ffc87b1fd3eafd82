// Lint: typescript-eslint's recommended rules, and the layer rule that keeps imports pointing one way
// (core ← domains ← adapters ← main). A wrong-way import fails `npm run lint`, and so CI.
import js from '@eslint/js';
import boundaries from 'eslint-plugin-boundaries';
import tseslint from 'typescript-eslint';

/** Each folder of src/ and the layer it belongs to. The first pattern that matches a file wins. */
const elements = [
  { type: 'core', pattern: 'src/core/**', partialMatch: false },
  { type: 'projects', pattern: 'src/projects/**', partialMatch: false },
  // Capabilities of auth: a cycle between two of them is caught like a cycle between folders.
  { type: 'auth-sessions', pattern: 'src/auth/sessions/**', partialMatch: false },
  { type: 'auth-events', pattern: 'src/auth/events/**', partialMatch: false },
  { type: 'auth-users', pattern: 'src/auth/users/**', partialMatch: false },
  { type: 'auth-providers', pattern: 'src/auth/providers/**', partialMatch: false },
  { type: 'auth-mfa', pattern: 'src/auth/mfa/**', partialMatch: false },
  { type: 'auth-claims', pattern: 'src/auth/claims/**', partialMatch: false },
  { type: 'auth-passwordless', pattern: 'src/auth/passwordless/**', partialMatch: false },
  { type: 'auth-organizations', pattern: 'src/auth/organizations/**', partialMatch: false },
  { type: 'auth', pattern: 'src/auth/**', partialMatch: false },
  // Change capture's one narrow interface: what the webhook service may call of the tailer.
  { type: 'capture', pattern: 'src/tailer/capture/**', partialMatch: false },
  { type: 'tailer', pattern: 'src/tailer/**', partialMatch: false },
  { type: 'delivery', pattern: 'src/delivery/**', partialMatch: false },
  { type: 'webhooks', pattern: 'src/webhooks/**', partialMatch: false },
  { type: 'http', pattern: 'src/http/**', partialMatch: false },
  { type: 'graphql', pattern: 'src/graphql/**', partialMatch: false },
  { type: 'docs', pattern: 'src/docs/**', partialMatch: false },
  { type: 'ops', pattern: 'src/ops/**', partialMatch: false },
  { type: 'retention', pattern: 'src/retention/**', partialMatch: false },
  { type: 'cli', pattern: 'src/cli/**', partialMatch: false },
  { type: 'main', pattern: 'src/main/**', partialMatch: false },
];

/** Who may import whom. Every folder may import itself; anything not listed is an error. */
const layers = {
  core: [],
  projects: ['core'],
  'auth-events': ['core', 'projects'],
  // The root of src/auth holds what capabilities share and the flows (service.ts) that use them;
  // a capability folder may use the root and the audit trail; the admin operations (users) may
  // also end sessions. Nothing points back, so a cycle between capabilities stays an error.
  auth: ['core', 'projects', 'auth-sessions', 'auth-events', 'auth-mfa', 'auth-organizations'],
  'auth-sessions': ['core', 'projects', 'auth', 'auth-events', 'auth-claims'],
  // The claims function joins every token minted (sessions), and knows nothing of who mints.
  'auth-claims': ['core', 'projects', 'auth'],
  // Magic links and e-mailed codes: a first factor that finishes through the MFA step like a password.
  'auth-passwordless': ['core', 'projects', 'auth', 'auth-events', 'auth-sessions', 'auth-mfa'],
  'auth-users': ['core', 'projects', 'auth', 'auth-events', 'auth-sessions', 'auth-mfa'],
  // Second factors: sign-in finishes with a session (or the MFA step), never the other way.
  'auth-mfa': ['core', 'projects', 'auth', 'auth-events', 'auth-sessions'],
  // Provider sign-in finishes through the MFA step when the user has a factor.
  'auth-providers': ['core', 'projects', 'auth', 'auth-events', 'auth-sessions', 'auth-mfa'],
  // Organizations switch a session's active organization; sessions only see a lookup (active-organization.ts).
  'auth-organizations': ['core', 'projects', 'auth', 'auth-events', 'auth-sessions'],
  tailer: ['core'],
  capture: ['core', 'tailer'],
  delivery: ['core', 'tailer'],
  webhooks: ['core', 'projects', 'delivery', 'capture'],
  http: [
    'core',
    'projects',
    'auth',
    'webhooks',
    'delivery',
    'auth-events',
    'auth-users',
    'auth-providers',
    'auth-mfa',
    'auth-claims',
    'auth-passwordless',
    'auth-organizations',
  ],
  graphql: [
    'core',
    'projects',
    'auth',
    'http',
    'auth-events',
    'auth-users',
    'auth-providers',
    'auth-mfa',
    'auth-passwordless',
    'auth-organizations',
  ],
  docs: ['core', 'http'],
  ops: ['core', 'tailer', 'delivery'],
  retention: ['core'],
  main: [
    'core',
    'projects',
    'auth',
    'tailer',
    'capture',
    'delivery',
    'webhooks',
    'http',
    'graphql',
    'docs',
    'ops',
    'retention',
    'auth-events',
    'auth-users',
    'auth-providers',
    'auth-mfa',
    'auth-claims',
    'auth-passwordless',
    'auth-organizations',
  ],
  cli: [
    'core',
    'projects',
    'auth',
    'tailer',
    'capture',
    'delivery',
    'webhooks',
    'main',
    'auth-events',
    'auth-users',
    'auth-mfa',
    'auth-claims',
    'auth-organizations',
  ],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.data/**', 'test/fixtures/lint/**', 'src/console/assets/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    files: ['src/**/*.ts', 'src/**/*.cts'],
    plugins: { boundaries },
    settings: {
      'boundaries/elements': elements,
      'boundaries/include': ['src/**/*'],
      'import/resolver': { typescript: { project: './tsconfig.json' } },
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        {
          default: 'disallow',
          policies: Object.entries(layers).map(([from, to]) => ({
            from: { element: { type: from } },
            allow: { to: { element: { types: { anyOf: [from, ...to] } } } },
          })),
        },
      ],
    },
  },
  {
    // chai's `expect(x).to.be.true` is an expression statement; test doubles may be loosely typed.
    files: ['test/**/*.ts', 'scripts/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-expressions': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['src/main/api.cts'],
    languageOptions: { sourceType: 'commonjs' },
  },
  {
    // The console's hand-written modules run in the browser (console/, served by src/http/console/).
    files: ['console/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'sessionStorage',
          'navigator',
          'crypto',
          'fetch',
          'btoa',
          'CSS',
          'Node',
          'URLSearchParams',
          'setInterval',
          'clearInterval',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
);
