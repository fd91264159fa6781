/** Unit tests are pure and fast; workflow tests run the workflow bundle on a local dev server; e2e tests drive the real stack (Temporal dev server, worker, API, simulator). */
const tsJest = ['ts-jest', { isolatedModules: true, diagnostics: false }];
module.exports = {
  testTimeout: 120000,
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform: { '^.+\\.ts$': tsJest },
      // test/routes: the Koa app in process with fake task dependencies (no worker, no Temporal).
      testMatch: ['<rootDir>/test/unit/**/*.test.ts', '<rootDir>/test/simulator/**/*.test.ts', '<rootDir>/test/routes/**/*.test.ts'],
    },
    {
      // The shipped workflow bundle on a local dev server with scripted activities, and the replay of saved histories.
      displayName: 'workflow',
      testEnvironment: 'node',
      transform: { '^.+\\.ts$': tsJest },
      testMatch: ['<rootDir>/test/workflow/**/*.test.ts'],
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      transform: { '^.+\\.ts$': tsJest },
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
