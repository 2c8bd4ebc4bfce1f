/**
 * The course's JupyterLab plugins, each in a module of its own:
 * validateScope shows nbgrader's Validate only on assignments, and timeLimit
 * warns before the session's time limit and saves the open documents.
 */

import { timeLimit } from './timeLimit';
import { validateScope } from './validateScope';

export default [validateScope, timeLimit];
